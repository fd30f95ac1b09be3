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
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pipeline.sh"

ARCHS_CSV="" RECIPE_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --archs) ARCHS_CSV=${2:-}; shift 2 || pl_die "--archs needs a value" ;;
    *) RECIPE_ARGS+=("$1"); shift ;;
  esac
done
pl_recipe_cli "${RECIPE_ARGS[@]}"
if [[ -z "$ARCHS_CSV" ]]; then
  ARCHS_CSV=$(pl_all_archs | paste -sd, -)
fi
IFS=, read -r -a ARCHS <<< "$ARCHS_CSV"
[[ ${#ARCHS[@]} -gt 0 ]] || pl_die "--archs is empty"
[[ "$DRY_RUN" == 1 ]] || pl_check_archs --archs "${ARCHS[@]}"
LIMITS=(100 75)

pl_recipe_prepare de-en 100,75 newstest_all,concat_seq
for set in newstest_all concat_seq; do
  SYSTEMS=()  # the systems of this set's report
  for len in "${LIMITS[@]}"; do
    for arch in "${ARCHS[@]}"; do pl_recipe_system de-en "$arch@$len" "$arch" "$len" "$set"; done
  done
  pl_recipe_extra_systems de-en "$set"
  pl_recipe_report "table5-$set" de-en "$set" "${ARCHS[0]}@100"
done
pl_recipe_done
