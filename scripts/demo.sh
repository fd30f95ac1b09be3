#!/usr/bin/env bash
# The study in miniature, on a CPU: do relative positions translate sentences longer than
# any seen in training, where absolute positions fail?
#
# Usage: bash scripts/demo.sh [options]
#
# The same scripts as the WMT recipes (scripts/reproduce/), on a synthetic language pair:
#   1. prepare-toy.sh: a generated corpus (scripts/lib/toy_corpus.py: SOV source,
#      SVO target with agreement, clauses chained to any length; 20,000 training sentences
#      of 12-40 words), joint BPE (subword-nmt), training pairs filtered to --train-limit
#      subword tokens on both sides, binarized (fairseq-preprocess)
#   2. build-test-sets.sh: the test set (300 sentences of 12-50 words, reaching about twice
#      the training limit in subword tokens) and its concat_seq (pairs 1+2, 3+4, ... joined)
#      (the word ranges scale with --train-limit; these are for 50)
#   3. train.sh: each system the same size (2+2 layers of width 64) and budget (--updates),
#      on CPU, as many at a time as there are cores (one core each); fairseq's progress
#      lines are shown prefixed with the system's name
#   4. translate.sh: both test sets (fairseq-generate, beam 5)
#   5. the length-bucket report (python -m analysis.report) for each test set: BLEU and TER
#      per length bucket with 95% confidence intervals and paired tests against the first
#      system.  A pair's length is the longer of its two sides in subword tokens: the filter
#      removed training pairs by either side, so that is what "beyond the training lengths"
#      means here.
# Each step is skipped when its output is complete for the same options, so a re-run resumes;
# a step whose options changed is redone.  The demo deletes only what it made: a folder in
# --out-dir that it did not make is refused, by name, before any work.  It prints how long
# each phase took.
#
# Options:
#   --systems LIST       comma-separated architectures, the first is the baseline (default
#                        transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos)
#   --train-limit N      longest training pair, in subword tokens (default 50)
#   --updates N          training updates per system (default 3000)
#   --quick              a smaller, faster run (fewer sentences and updates) for CI; its
#                        numbers show nothing
#   --seed N             seed of the corpus and of training (default 1)
#   --out-dir DIR        where everything goes (default runs/demo in the checkout)
#   -h, --help           this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

SYSTEMS=transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos
LIMIT=50 UPDATES=3000 SEED=1 OUT="$PL_REPO/runs/demo" QUICK=0
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
[[ "$LIMIT" =~ ^[1-9][0-9]*$ && "$LIMIT" -ge 16 ]] || pl_die "--train-limit: expected an integer of at least 16, got '$LIMIT'"
[[ "$UPDATES" =~ ^[1-9][0-9]*$ ]] || pl_die "--updates: expected a positive integer, got '$UPDATES'"
[[ "$SEED" =~ ^[0-9]+$ ]] || pl_die "--seed: expected a non-negative integer, got '$SEED'"
IFS=, read -r -a ARCHS <<< "$SYSTEMS"
[[ ${#ARCHS[@]} -gt 0 ]] || pl_die "--systems is empty"
duplicates=$(printf '%s\n' "${ARCHS[@]}" | sort | uniq -d | paste -sd, -)
[[ -z "$duplicates" ]] || pl_die "--systems names $duplicates more than once (each system trains into its own folder)"
TRAIN_PAIRS=20000 TEST_PAIRS=300
if [[ "$QUICK" == 1 ]]; then
  TRAIN_PAIRS=4000 TEST_PAIRS=60 UPDATES=$(( UPDATES < 200 ? UPDATES : 200 ))
fi
# Sentence lengths in source words, scaled with the limit (50: training 12-40, test 12-50).
# A target has about 1.4 words per source word and BPE splits few words, so training
# sentences straddle the limit and the test set's longer sides reach about twice it.
SHORTEST=$((LIMIT / 4))
DATA_ARGS=(--seed "$SEED" --max-len "$LIMIT"
  --train-pairs "$TRAIN_PAIRS" --train-words "$SHORTEST $((LIMIT * 4 / 5))"
  --test-pairs "$TEST_PAIRS" --test-words "$SHORTEST $LIMIT")
TEST_SETS=(test concat_seq)

# The demo deletes only folders it made: each carries a marker (demo.settings, or
# demo.command in a report folder).  Anything else in the way is refused before any work.
refuse_unless_ours() {  # DIR MARKER
  if [[ -d "$1" && ! -f "$1/$2" && -n "$(ls -A "$1")" ]]; then
    pl_die "$1 exists and was not made by demo.sh (no $2 in it); choose another --out-dir or move it away"
  fi
}
refuse_unless_ours "$OUT/data" demo.settings
for arch in "${ARCHS[@]}"; do refuse_unless_ours "$OUT/$arch" demo.settings; done
for set in "${TEST_SETS[@]}"; do refuse_unless_ours "$OUT/report/$set" demo.command; done

pl_enter_env
pl_check_archs --systems "${ARCHS[@]}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
DATA="$OUT/data"
START=$SECONDS
PHASE_START=$SECONDS
# phase_took WHAT: how long the phase that ends now took
phase_took() {
  pl_log "$1 took $((SECONDS - PHASE_START)) s"
  PHASE_START=$SECONDS
}

# A folder of the demo whose recorded options differ from these is started afresh.
fresh_unless_same() {  # DIR SETTINGS
  if [[ "$(cat "$1/demo.settings" 2>/dev/null)" != "$2" ]]; then
    rm -rf "$1" && mkdir -p "$1" && echo "$2" > "$1/demo.settings"
  fi
}
DATA_SETTINGS="${DATA_ARGS[*]}"
fresh_unless_same "$DATA" "$DATA_SETTINGS"

# 1-2. data and test sets
bash "$PL_SCRIPTS/prepare-toy.sh" --work-dir "$DATA" "${DATA_ARGS[@]}" --threads "$THREADS" > "$DATA/prepare.log" 2>&1 ||
  { tail -n 20 "$DATA/prepare.log" >&2; pl_die "preparing the data failed (see $DATA/prepare.log)"; }
grep -h "length filter" "$DATA/len$LIMIT/filter.txt" >&2
bash "$PL_SCRIPTS/build-test-sets.sh" --work-dir "$DATA" --threads "$THREADS" >&2
phase_took "preparing the data and the test sets"

# 3-4. per system: training, then both test sets translated; one system per core
TINY_MODEL=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
  --encoder-ffn-embed-dim 128 --decoder-ffn-embed-dim 128
  --encoder-attention-heads 4 --decoder-attention-heads 4 --dropout 0.1)
run_system() {
  local arch=$1 set
  fresh_unless_same "$OUT/$arch" "$DATA_SETTINGS --updates $UPDATES"
  bash "$PL_SCRIPTS/train.sh" --data "$DATA/data-bin/len$LIMIT" --arch "$arch" \
    --save-dir "$OUT/$arch" --gpus 0 --batch-tokens 2000 --lr 3e-3 --lr-scheduler inverse_sqrt \
    --seed "$SEED" "${TINY_MODEL[@]}" --warmup-updates 100 \
    --max-update "$UPDATES" --max-epochs 1000 --patience -1 --log-interval 100 --num-workers 0
  for set in "${TEST_SETS[@]}"; do
    bash "$PL_SCRIPTS/translate.sh" --checkpoint "$OUT/$arch/checkpoint_best.pt" \
      --testset "$DATA/testsets/$set" --out-dir "$OUT/$arch/$set" --cpu
  done
}
pl_run_systems run_system "see $OUT/*/train.log and $OUT/*/*/generate.err" "${ARCHS[@]}"
phase_took "training and translating"

# 5. the length-bucket reports
REPORTS=()
for set in "${TEST_SETS[@]}"; do
  # buckets at multiples of the limit: up to 2x in halves for the test set, up to 3x for
  # concat_seq, whose joined pairs are twice as long
  case "$set" in
    test) edges="$LIMIT,$((LIMIT * 3 / 2)),$((LIMIT * 2))" ;;
    concat_seq) edges="$LIMIT,$((LIMIT * 2)),$((LIMIT * 3))" ;;
  esac
  systems=()
  for arch in "${ARCHS[@]}"; do systems+=("$arch=$OUT/$arch/$set/hyp.txt"); done
  pl_length_report demo.command "$OUT/report/$set" "$DATA/testsets/$set" src tgt "${systems[@]}" -- \
    --baseline "${ARCHS[0]}" --tokenize none --metrics bleu,ter --edges "$edges" \
    --train-limit "$LIMIT" --bootstrap 200 --seed "$SEED" \
    --title "Demo, $set: trained on pairs of up to $LIMIT subword tokens (length: longer side)"
  REPORTS+=("$OUT/report/$set")
done
phase_took "the reports"
pl_log "done in $((SECONDS - START)) s"
for r in "${REPORTS[@]}"; do echo "report: $r (report.md, report.json, buckets.png, lengths.png)"; done
