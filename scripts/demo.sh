#!/usr/bin/env bash
# The study in miniature, on a CPU: do relative positions translate sentences longer than
# any seen in training, where absolute positions fail?
#
# Usage: bash scripts/demo.sh [options]
#
# Steps (each skipped when its output is complete for the same options, so a re-run resumes):
#   1. a synthetic language pair (python -m fairseq_relpos.toy_corpus, small lexicon): SOV
#      source, SVO target with agreement, clauses chained to any length; training sentences
#      of 12-40 words, test sentences of 12-65
#   2. joint BPE (subword-nmt), training and dev pairs filtered to --train-limit subword
#      tokens on both sides (scripts/lib/filter_pairs.py), binarized (fairseq-preprocess)
#   3. each system trained with scripts/train.sh (fairseq-train, 2+2 layers of width 64, on
#      CPU; two systems at a time, one core each)
#   4. the test set translated (fairseq-generate, beam 4, outputs up to 1.6 x source + 10)
#   5. the length-bucket report (python -m analysis.report): BLEU and TER per length bucket
#      with 95% confidence intervals, against the first system.  A pair's length is the
#      longer of its two sides in subword tokens: the filter removed training pairs by
#      either side, so that is what "beyond the training lengths" means here.
#
# Options:
#   --systems LIST       comma-separated architectures (default transformer_abs,transformer_rel)
#   --train-limit N      longest training pair, in subword tokens (default 50)
#   --updates N          training updates per system (default 1600)
#   --quick              a smaller run (fewer sentences and updates) for CI
#   --seed N             seed of the corpus and of training (default 1)
#   --out-dir DIR        where everything goes (default runs/demo in the checkout)
#   -h, --help           this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

SYSTEMS=transformer_abs,transformer_rel LIMIT=50 UPDATES=1600 SEED=1 OUT="$PL_REPO/runs/demo"
TRAIN_PAIRS=20000 TEST_PAIRS=300 QUICK=0
TRAIN_WORDS="12 40" TEST_WORDS="12 65"  # sentence lengths in words: shortest, longest
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) pl_help "$0"; exit 0 ;;
    --systems) SYSTEMS=$2; shift 2 ;;
    --train-limit) LIMIT=$2; shift 2 ;;
    --updates) UPDATES=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --seed) SEED=$2; shift 2 ;;
    --out-dir) OUT=$2; shift 2 ;;
    *) pl_die "unknown option '$1' (see --help)" ;;
  esac
done
for n in "$LIMIT" "$UPDATES" "$SEED"; do
  [[ "$n" =~ ^[0-9]+$ ]] || pl_die "expected a non-negative integer, got '$n'"
done
if [[ "$QUICK" == 1 ]]; then
  TRAIN_PAIRS=4000 TEST_PAIRS=60 UPDATES=$(( UPDATES < 200 ? UPDATES : 200 ))
fi
IFS=, read -r -a ARCHS <<< "$SYSTEMS"
pl_enter_env
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
DATA="$OUT/data"
START=$SECONDS

# What each step's output depends on; a step whose recorded settings differ is redone.
DATA_SETTINGS="seed=$SEED limit=$LIMIT train=$TRAIN_PAIRS x $TRAIN_WORDS test=$TEST_PAIRS x $TEST_WORDS"
MODEL_SETTINGS="$DATA_SETTINGS updates=$UPDATES"

# 1-2. corpus, BPE, length filter, binarization
if [[ "$(cat "$DATA/bin/.done" 2>/dev/null)" != "$DATA_SETTINGS" ]]; then
  pl_log "generating the corpus and segmenting it in $DATA"
  rm -rf "$DATA" && mkdir -p "$DATA/raw"
  corpus() {  # corpus NAME PAIRS SEED MIN_WORDS MAX_WORDS
    python -m fairseq_relpos.toy_corpus --lexicon-size small --out-prefix "$DATA/raw/$1" \
      --n "$2" --seed "$3" --min-words "$4" --max-words "$5" 2> /dev/null
  }
  # shellcheck disable=SC2086  # the word ranges are two numbers each
  corpus train "$TRAIN_PAIRS" "$SEED" $TRAIN_WORDS
  # shellcheck disable=SC2086
  corpus valid 300 $((SEED + 1000)) $TRAIN_WORDS
  # shellcheck disable=SC2086
  corpus test "$TEST_PAIRS" $((SEED + 2000)) $TEST_WORDS
  cat "$DATA/raw/train.src" "$DATA/raw/train.tgt" | subword-nmt learn-bpe -s 400 > "$DATA/bpe.codes"
  for split in train valid test; do
    for side in src tgt; do
      subword-nmt apply-bpe -c "$DATA/bpe.codes" < "$DATA/raw/$split.$side" > "$DATA/$split.bpe.$side"
    done
  done
  for split in train valid; do
    pl_py filter_pairs.py --src "$DATA/$split.bpe.src" --tgt "$DATA/$split.bpe.tgt" \
      --out-src "$DATA/$split.kept.src" --out-tgt "$DATA/$split.kept.tgt" --max-len "$LIMIT" --label "$split"
  done
  # the longer side of each test pair: its token count is the pair's length in the report
  paste "$DATA/test.bpe.src" "$DATA/test.bpe.tgt" |
    awk -F '\t' '{ print (split($1, s, " ") >= split($2, t, " ") ? $1 : $2) }' > "$DATA/test.longer-side"
  fairseq-preprocess --source-lang src --target-lang tgt --trainpref "$DATA/train.kept" \
    --validpref "$DATA/valid.kept" --testpref "$DATA/test.bpe" --destdir "$DATA/bin" \
    --workers "$THREADS" > "$DATA/preprocess.log" 2>&1
  echo "$DATA_SETTINGS" > "$DATA/bin/.done"
fi
for arch in "${ARCHS[@]}"; do
  if [[ "$(cat "$OUT/$arch/demo.settings" 2>/dev/null)" != "$MODEL_SETTINGS" ]]; then
    rm -rf "${OUT:?}/$arch" && mkdir -p "$OUT/$arch" && echo "$MODEL_SETTINGS" > "$OUT/$arch/demo.settings"
  fi
done

# 3. training, two systems at a time on one core each
TINY_MODEL=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
  --encoder-ffn-embed-dim 128 --decoder-ffn-embed-dim 128
  --encoder-attention-heads 4 --decoder-attention-heads 4 --dropout 0.1)
train_system() {
  OMP_NUM_THREADS=1 bash "$PL_SCRIPTS/train.sh" --data "$DATA/bin" --arch "$1" \
    --save-dir "$OUT/$1" --gpus 0 --batch-tokens 2000 --lr 3e-3 --lr-scheduler inverse_sqrt \
    --seed "$SEED" "${TINY_MODEL[@]}" --warmup-updates 100 \
    --max-update "$UPDATES" --max-epoch 1000 --patience -1 \
    --log-interval 50 --num-workers 0 2>&1 | sed -u "s/^/[$1] /"
}
for ((i = 0; i < ${#ARCHS[@]}; i += 2)); do
  pids=()
  for arch in "${ARCHS[@]:i:2}"; do
    train_system "$arch" & pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || pl_die "training failed (see $OUT/*/train.log)"; done
done

# 4. translation of the test set, in source order, segmentation undone
translate_system() {
  local dir="$OUT/$1"
  [[ -f "$dir/hyp.txt" && "$dir/hyp.txt" -nt "$dir/checkpoint_best.pt" ]] && return 0
  OMP_NUM_THREADS=1 fairseq-generate "$DATA/bin" --user-dir fairseq_relpos \
    --path "$dir/checkpoint_best.pt" --beam 4 --batch-size 32 --cpu \
    --max-len-a 1.6 --max-len-b 10 --remove-bpe > "$dir/generate.log" 2> "$dir/generate.err"
  pl_py gen_output.py --log "$dir/generate.log" --n "$(pl_lines "$DATA/raw/test.src")" --out "$dir/hyp.txt"
}
pl_log "translating the test set"
pids=()
for arch in "${ARCHS[@]}"; do translate_system "$arch" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid" || pl_die "translation failed (see $OUT/*/generate.err)"; done

# 5. the length-bucket report
SYSTEM_ARGS=()
for arch in "${ARCHS[@]}"; do SYSTEM_ARGS+=(--system "$arch=$OUT/$arch/hyp.txt"); done
python -m analysis.report --source "$DATA/test.bpe.src" --length-file "$DATA/test.longer-side" \
  --ref "$DATA/raw/test.tgt" "${SYSTEM_ARGS[@]}" --baseline "${ARCHS[0]}" --tokenize none \
  --metrics bleu,ter --edges "$((LIMIT / 2)),$LIMIT,$((LIMIT * 3 / 2)),$((LIMIT * 2))" \
  --train-limit "$LIMIT" --bootstrap 200 --seed "$SEED" \
  --title "Demo: trained on pairs up to $LIMIT subword tokens (buckets: longer side)" \
  --out-dir "$OUT/report"
pl_log "done in $((SECONDS - START)) s; report, plots and JSON in $OUT/report"
