#!/usr/bin/env bash
# Table 1 of the study: Absolute vs. Relative (Shaw, k=16) on WMT19 De->En (newstest2018) and
# Zh->En (newstest2019); training data filtered to 100 subword tokens.
#
# Usage: scripts/reproduce/table1.sh [options]          (SMOKE=1 for a tiny CPU run)
#
# Steps: prepare-wmt19-de-en.sh and prepare-wmt19-zh-en.sh, build-test-sets.sh, train.sh for
# each system, translate.sh, then python -m relpos_analysis.report per direction.
#   runs/wmt19-PAIR/ARCH-len100/          checkpoints, logs and translations
#   runs/reports/table1-de-en, table1-zh-en   report.md/json/csv/tex, plots
# Study: De->En 40.4/46.7 (Absolute), 40.4/46.9 (Relative) BLEU/TER;
#        Zh->En 24.0/64.0 (Absolute), 25.0/62.9 (Relative).
#
# Options:
#   --local-dir DIR    corpora and test sets (see the prepare scripts; Zh->En needs the UN and
#                      CWMT corpora from a local directory); repeatable
#   --offline          never download
#   --work-root DIR    prepared data (default work/, with SMOKE=1 work/smoke/)
#   --runs-root DIR    models, translations, reports (default runs/, with SMOKE=1 runs/smoke/)
#   --system LABEL=ARCH@MAXLEN   add a system (e.g. a new scheme) to every report; repeatable
#   --threads N        steps at a time (default: all cores; each GPU training takes them all)
#   --dry-run          list every step with its command and whether it is done; run nothing
#   --oracle-length    also decode each model with each sentence's reference length: the
#                      reports then set free against oracle-length BLEU per bucket
#   @launcher-options (scripts/lib/launcher-options.txt)
#   -h, --help         this help
# Environment: SMOKE=1 (tiny data from SMOKE_DATA, default ../shared/data/wmt-newstest, and
# 1+1-layer models on CPU); TRAIN_EXTRA_ARGS (extra train.sh/fairseq-train arguments);
# RELPOS_ARCH_OVERRIDE=ARCH (train every system with ARCH, e.g. transformer, to test the
# plumbing); SKIP_REPORT=1 (stop after the translations).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe table1 "$@"
