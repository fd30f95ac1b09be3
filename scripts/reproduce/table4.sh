#!/usr/bin/env bash
# Table 4 of the study: variants of relative position encoding on concat_seq, all trained on
# at most 100 subword tokens: Relative (Shaw), relative sinusoidal, gamma^K-only, and
# relative + absolute.
#
# Usage: scripts/reproduce/table4.sh [options]          (SMOKE=1 for a tiny CPU run)
#
# Study BLEU (buckets 0-25/26-50/51-75/76-100/>100):
#   Relative                  27.0/26.9/27.2/27.3/24.5
#   Relative sinusoidal       26.4/26.9/27.1/27.0/24.5
#   Relative gamma^K-only     27.1/27.1/27.1/27.1/24.4
#   Relative and absolute     26.2/26.7/27.0/26.7/22.5
# Output: runs/reports/table4 (Relative is shared with table2.sh/table3.sh).
#
# Options and environment: as scripts/reproduce/table1.sh --help.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe table4 "$@"
