#!/usr/bin/env bash
# Table 3 of the study: BLEU/TER by source length on concat_seq (newstest_all's consecutive
# pairs joined, 14,038 pairs) for Absolute and Relative trained on at most 100 and at most 75
# subword tokens.
#
# Usage: scripts/reproduce/table3.sh [options]          (SMOKE=1 for a tiny CPU run)
#
# Buckets (sizes 940 / 5903 / 4709 / 1755 / 731).
# Study BLEU: Absolute@100 26.9/27.1/27.2/27.4/20.1   Relative@100 27.0/26.9/27.2/27.3/24.5
#             Absolute@75  26.7/26.9/26.9/22.7/14.9   Relative@75  26.8/27.1/27.3/27.0/24.2
# The models are those of table2.sh (trained once, whichever recipe runs first).
# Output: runs/reports/table3.
#
# Options and environment: as scripts/reproduce/table1.sh --help.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe table3 "$@"
