#!/usr/bin/env bash
# The length study on real language: Tatoeba German->English, trained on pairs of up to 16
# subword tokens, tested on every length up to about 3x that and on pairs joined two and
# three at a time.
#
# Usage: scripts/reproduce/tatoeba.sh --from FILE [options]       (SMOKE=1 for a tiny run)
#
# Steps: prepare-tatoeba.sh (split, Moses tokenization, 10k joint BPE merges, length filter,
# test sets test, concat_seq and concat3_seq), then per system train.sh and translate.sh
# (beam 5) on the three test sets, then python -m analysis.report per test set: BLEU and TER
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
#   -h, --help         this help
# Environment: SMOKE=1 runs every step on every 85th pair of SMOKE_DATA (default
# ../shared/data/tatoeba-deu-eng/deu.txt next to the checkout) with 1+1-layer models and 16
# updates, in a few minutes; TRAIN_EXTRA_ARGS adds train.sh/fairseq-train arguments.
# Re-running resumes: finished steps are skipped, training resumes from its last checkpoint.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/pipeline.sh"

SMOKE="${SMOKE:-0}"
SYSTEMS=transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos
FROM="" FETCH=() UPDATES=2500 SEED=1 LIMIT=16
WORK="$PL_REPO/work/tatoeba-de-en" OUT="$PL_REPO/runs/tatoeba"
if [[ "$SMOKE" == 1 ]]; then
  WORK="$PL_REPO/work/smoke/tatoeba-de-en" OUT="$PL_REPO/runs/smoke/tatoeba"
fi
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) pl_help "$0"; exit 0 ;;
    --from) FROM=$2; shift 2 ;;
    --download) FETCH=(--download); shift ;;
    --systems) SYSTEMS=$2; shift 2 ;;
    --updates) UPDATES=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --work-dir) WORK=$2; shift 2 ;;
    --out-dir) OUT=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) pl_die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$UPDATES" =~ ^[1-9][0-9]*$ ]] || pl_die "--updates: expected a positive integer, got '$UPDATES'"
[[ "$SEED" =~ ^[0-9]+$ ]] || pl_die "--seed: expected a non-negative integer, got '$SEED'"
pl_systems_list "$SYSTEMS"

MODEL=(--encoder-layers 3 --decoder-layers 3 --encoder-embed-dim 256 --decoder-embed-dim 256
  --encoder-ffn-embed-dim 1024 --decoder-ffn-embed-dim 1024 --encoder-attention-heads 4
  --decoder-attention-heads 4 --dropout 0.1 --share-decoder-input-output-embed)
PREPARE=() TRANSLATE=() BOOTSTRAP=1000
if [[ "$SMOKE" == 1 ]]; then
  [[ -z "$FROM" && ${#FETCH[@]} -eq 0 ]] || pl_die "SMOKE=1 takes its data from SMOKE_DATA, not --from/--download"
  SMOKE_DATA="${SMOKE_DATA:-$PL_REPO/../shared/data/tatoeba-deu-eng/deu.txt}"
  [[ -f "$SMOKE_DATA" ]] || pl_die "SMOKE=1 needs the Tatoeba deu.txt; set SMOKE_DATA (tried $SMOKE_DATA)"
  mkdir -p "$WORK/raw"
  FROM="$WORK/raw/slice.txt"
  awk 'NR % 85 == 0' "$SMOKE_DATA" > "$FROM.tmp.$$" && mv "$FROM.tmp.$$" "$FROM"
  PREPARE=(--dev-pairs 100 --test-short-pairs 100 --bpe-merges 500)
  MODEL=("${PL_SMOKE_TRAIN[@]}") TRANSLATE=("${PL_SMOKE_TRANSLATE[@]}") BOOTSTRAP=50
  UPDATES=16
  pl_log "SMOKE=1: every 85th pair of $SMOKE_DATA, tiny models (work: $WORK, runs: $OUT)"
fi
[[ -n "$FROM" || ${#FETCH[@]} -gt 0 ]] || pl_die "--from FILE (deu.txt or deu-eng.zip) or --download is required (see --help)"
if [[ -n "$FROM" ]]; then FETCH=(--from "$FROM"); fi
EXTRA=()
if [[ -n "${TRAIN_EXTRA_ARGS:-}" ]]; then read -r -a EXTRA <<< "$TRAIN_EXTRA_ARGS"; fi

pl_enter_env
pl_check_archs --systems "${ARCHS[@]}"
START=$SECONDS
bash "$PL_SCRIPTS/prepare-tatoeba.sh" "${FETCH[@]}" --out-dir "$WORK" --max-len "$LIMIT" \
  --threads "$THREADS" "${PREPARE[@]}"
WORK="$(cd "$WORK" && pwd)"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
pl_log "data prepared in $((SECONDS - START)) s"

TEST_SETS=(test concat_seq concat3_seq)
DEVICE=(--gpus 0) TRANSLATE_DEVICE=(--cpu) AT_ONCE=$THREADS
if pl_gpu_listed; then DEVICE=() TRANSLATE_DEVICE=() AT_ONCE=1; fi
run_system() {
  local arch=$1 set
  bash "$PL_SCRIPTS/train.sh" --data "$WORK/data-bin/len$LIMIT" --arch "$arch" \
    --save-dir "$OUT/$arch" "${DEVICE[@]}" --batch-tokens 2048 --lr 1e-3 \
    --lr-scheduler inverse_sqrt --warmup-updates 400 --seed "$SEED" "${MODEL[@]}" \
    --max-update "$UPDATES" --max-epochs 1000 --patience -1 --num-workers 0 "${EXTRA[@]}"
  for set in "${TEST_SETS[@]}"; do
    bash "$PL_SCRIPTS/translate.sh" --checkpoint "$OUT/$arch/checkpoint_best.pt" \
      --testset "$WORK/testsets/$set" --out-dir "$OUT/$arch/$set" "${TRANSLATE_DEVICE[@]}" \
      "${TRANSLATE[@]}"
  done
}
PHASE=$SECONDS
THREADS=$AT_ONCE pl_run_systems run_system "see $OUT/*/train.log and $OUT/*/*/generate.err" "${ARCHS[@]}"
pl_log "training and translating took $((SECONDS - PHASE)) s"

for set in "${TEST_SETS[@]}"; do
  case "$set" in
    test) edges="$LIMIT,$((LIMIT * 3 / 2)),$((LIMIT * 2)),$((LIMIT * 3))" ;;
    *) edges="$LIMIT,$((LIMIT * 2)),$((LIMIT * 3)),$((LIMIT * 4))" ;;
  esac
  systems=()
  for arch in "${ARCHS[@]}"; do systems+=("$arch=$OUT/$arch/$set/hyp.txt"); done
  pl_length_report report.command "$OUT/report/$set" "$WORK/testsets/$set" de en "${systems[@]}" -- \
    --baseline "${ARCHS[0]}" --tokenize 13a --metrics bleu,ter --edges "$edges" \
    --train-limit "$LIMIT" --bootstrap "$BOOTSTRAP" --seed "$SEED" \
    --title "Tatoeba De-En, $set: trained on pairs of up to $LIMIT subword tokens (length: longer side)"
done
pl_log "done in $((SECONDS - START)) s"
for set in "${TEST_SETS[@]}"; do echo "report: $OUT/report/$set (report.md, report.json, buckets.png, lengths.png)"; done
