#!/usr/bin/env bash
# The length study on real language: Tatoeba German->English, trained on pairs of up to 16
# subword tokens, tested on every length up to about 3x that and on pairs joined two and
# three at a time.
#
# Usage: scripts/reproduce/tatoeba.sh --from FILE [options]       (SMOKE=1 for a tiny run)
#
# Steps: prepare-tatoeba.sh (split, Moses tokenization, 10k joint BPE merges, length filter,
# test sets test, concat_seq and concat3_seq), then per system train.sh and translate.sh
# (beam 5) on the three test sets, then python -m relpos_analysis.report per test set: BLEU and TER
# (sacreBLEU, 13a, on detokenized text) per length bucket, with 95% bootstrap intervals and
# paired tests against the first system, and the plots.  A pair's length is its longer side
# in subword tokens; the buckets are at multiples of the limit (test: 1, 1.5, 2 and 3x;
# the joined sets: 1, 2, 3 and 4x).
#   WORK/                          prepared data (prepare-tatoeba.sh)
#   OUT/ARCH/                      checkpoints and logs; OUT/ARCH/SET/ the translations
#   OUT/report/SET/                report.md/json/csv/tex, buckets.png, lengths.png
# Every system has the same model (3+3 layers of width 256, 4 heads, FFN 1024, dropout 0.1,
# tied decoder embeddings) and budget (--updates updates of 2,048 tokens, Adam, lr 1e-3 on an
# inverse-sqrt schedule with 400 warm-up updates, label smoothing 0.1); the checkpoint with
# the best dev perplexity (one evaluation per epoch, and at the end) translates.  Without a
# GPU the systems train side by side, one per core; with one, one after the other on it.
#
# Options:
#   --from FILE        deu.txt or deu-eng.zip from manythings.org/anki (see prepare-tatoeba.sh)
#   --download         fetch the current export instead
#   --systems LIST     comma-separated architectures, the first is the baseline (default
#                      transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos)
#   --updates N        training updates per system (default 2500)
#   --seed N           seed of training (the split's is prepare-tatoeba.sh's default, 1)
#   --work-dir DIR     prepared data (default work/tatoeba-de-en; SMOKE=1: work/smoke/...)
#   --out-dir DIR      models, translations, reports (default runs/tatoeba; SMOKE=1:
#                      runs/smoke/tatoeba)
#   --threads N        cores to use (default: all)
#   --dry-run          list every step with its command and whether it is done; run nothing
#   --oracle-length    also decode each model with each sentence's reference length: the
#                      reports then set free against oracle-length BLEU per bucket
#   @launcher-options (scripts/lib/launcher-options.txt)
#   -h, --help         this help
# Environment: SMOKE=1 runs every step on every 85th pair of SMOKE_DATA (default
# ../shared/data/tatoeba-deu-eng/deu.txt next to the checkout) with 1+1-layer models and 16
# updates (an explicit --updates is kept), in a few minutes; TRAIN_EXTRA_ARGS adds train.sh/fairseq-train arguments.
# Re-running resumes: finished steps are skipped, training resumes from its last checkpoint.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe tatoeba "$@"
