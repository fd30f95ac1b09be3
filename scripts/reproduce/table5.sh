#!/usr/bin/env bash
# Table 5 (beyond the study): every position scheme of fairseq-relpos on WMT19 De->En,
# trained on pairs of at most 100 and at most 75 subword tokens, scored by the study's
# buckets on newstest_all and on concat_seq.
#
# Usage: scripts/reproduce/table5.sh [options]          (SMOKE=1 for a tiny CPU run)
#
# Steps: as table2.sh and table3.sh (the same data, test sets, train.sh and translate.sh),
# for every architecture ARCH at both limits: runs/wmt19-de-en/ARCH-len100 and ARCH-len75,
# shared with tables 1-4 (a model any of them trained is reused).  Systems are labelled
# ARCH@LIMIT; the baseline is transformer_abs@100.
# Output: runs/reports/table5-newstest_all and runs/reports/table5-concat_seq.
# Cost: 40 Transformer-base systems, about ten times table 2's.
#
# Options: as scripts/reproduce/table1.sh --help, and
#   --archs LIST       comma-separated architectures (default: every architecture of
#                      fairseq-relpos, transformer_abs first); the first at 100 is the baseline
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe table5 "$@"
