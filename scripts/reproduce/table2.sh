#!/usr/bin/env bash
# Table 2 of the study: BLEU/TER by source length on newstest_all (De->En newstest2008-2018
# without newstest2015, 28,075 pairs) for Absolute, Relative and LSTM trained on pairs of at
# most 100 subword tokens, and Absolute and Relative trained on at most 75.
#
# Usage: scripts/reproduce/table2.sh [options]          (SMOKE=1 for a tiny CPU run)
#
# Buckets G0:25 / G26:50 / G51:75 / G76:100 / G101:inf (sizes 14641 / 11024 / 2109 / 261 / 40).
# Study BLEU: Absolute@100 31.7/32.0/31.4/29.3/21.5   Relative@100 31.8/32.2/31.8/29.3/29.3
#             LSTM@100     31.4/31.9/31.4/28.7/25.5   Absolute@75  31.7/32.0/31.2/25.9/15.3
#             Relative@75  31.7/31.9/31.5/29.6/27.2
# Output: runs/reports/table2 (the models are shared with table3.sh).
#
# Options and environment: as scripts/reproduce/table1.sh --help.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe table2 "$@"
