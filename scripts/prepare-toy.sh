#!/usr/bin/env bash
# Prepare the synthetic language pair of the demo (scripts/lib/toy_corpus.py) the
# way prepare-wmt19-de-en.sh prepares WMT19: the same steps, stamps and output layout, so
# that build-test-sets.sh, train.sh and translate.sh work on it unchanged.
#
# Usage: scripts/prepare-toy.sh [options]
#
#   1. generate the corpora (small lexicon, deterministic from --seed): training pairs and a
#      dev set with --train-words source words, a test set with --test-words (longer);
#   2. no tokenization (the generated text is lowercase words and a full stop);
#   3. clean: drop empty lines and pairs whose length ratio exceeds --clean-ratio;
#   4. learn and apply joint BPE (subword-nmt, --bpe-merges merge operations);
#   5. build the two dictionaries (languages "src" and "tgt");
#   6. for each --max-len N: drop training pairs whose source OR target has more than N
#      subword tokens, then binarize into WORK/data-bin/lenN (see train.sh).
# build-test-sets.sh --work-dir WORK then builds "test" (the long test set) and "concat_seq"
# (its pairs 1+2, 3+4, ... joined).
#
# Options:
#   --work-dir DIR        output directory (default: work/toy in the checkout)
#   --seed N              seed of the sentences (default 1; dev and test use N+1000, N+2000)
#   --train-pairs N       training pairs generated, before the length filter (default 20000)
#   --train-words "A B"   training and dev sentences of A to B source words (default "12 40")
#   --dev-pairs N         (default 300)
#   --test-pairs N        (default 300)
#   --test-words "A B"    test sentences of A to B source words (default "12 50")
#   --max-len LIST        comma-separated length limits in subword tokens (default 50)
#   --bpe-merges N        joint BPE merge operations (default 400)
#   --bpe-vocab-threshold N  subword-nmt --vocabulary-threshold when applying (default 50)
#   --clean-ratio R       maximum length ratio of a pair (default 9)
#   --shards N            training shards = dev evaluations per epoch (default 1)
#   --threads N           parallel workers (default: all cores)
#   -h, --help            this help
#
# Re-running skips completed steps (stamps in WORK/.done; a step whose outputs were deleted
# is redone, with the steps that depend on it).  Settings that change the data are recorded
# in WORK/config.env and cannot change in an existing WORK.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

PAIR=toy SRC=src TGT=tgt TITLE="the synthetic pair"
TEXTPROC=none SEG=bpe DEFAULT_SEG_SIZE=400
DEFAULT_CORPORA=toy DEV_SETS=(valid) TEST_SET=test
DEFAULT_WORK="$PL_REPO/work/toy" DEFAULT_MAX_LENS=50 DEFAULT_SHARDS=1
TEST_SETS_DEFAULT=test,concat_seq CONCAT_OF=test  # build-test-sets.sh

SEED=1 TRAIN_PAIRS=20000 TRAIN_WORDS="12 40" DEV_PAIRS=300 TEST_PAIRS=300 TEST_WORDS="12 50"
COMMON_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seed) SEED=$2; shift 2 ;;
    --train-pairs) TRAIN_PAIRS=$2; shift 2 ;;
    --train-words) TRAIN_WORDS=$2; shift 2 ;;
    --dev-pairs) DEV_PAIRS=$2; shift 2 ;;
    --test-pairs) TEST_PAIRS=$2; shift 2 ;;
    --test-words) TEST_WORDS=$2; shift 2 ;;
    *) COMMON_ARGS+=("$1"); shift ;;  # the options every preparation has
  esac
done
for n in "$SEED" "$TRAIN_PAIRS" "$DEV_PAIRS" "$TEST_PAIRS"; do
  [[ "$n" =~ ^[0-9]+$ ]] || pl_die "expected a non-negative integer, got '$n'"
done
for range in "$TRAIN_WORDS" "$TEST_WORDS"; do
  [[ "$range" =~ ^[0-9]+\ [0-9]+$ ]] || pl_die "expected a word range \"SHORTEST LONGEST\", got '$range'"
done
EXTRA_CONFIG="TOY=seed $SEED; train $TRAIN_PAIRS x $TRAIN_WORDS words; dev $DEV_PAIRS; test $TEST_PAIRS x $TEST_WORDS words"

# toy_generate OUT_PREFIX PAIRS SEED "SHORTEST LONGEST": OUT_PREFIX.{src,tgt}
toy_generate() {
  local words
  read -r -a words <<< "$4"
  pl_py toy_corpus.py --lexicon-size small --src-lang "$SRC" --tgt-lang "$TGT" \
    --out-prefix "$1" --n "$2" --seed "$3" --min-words "${words[0]}" --max-words "${words[1]}"
}
# the fetchers of pl_prepare, called as FETCHER SOURCES WORK PAIR NAME
toy_corpus() { toy_generate "$2/orig/train.$4" "$TRAIN_PAIRS" "$SEED" "$TRAIN_WORDS"; }
toy_testset() {
  case "$4" in
    valid) toy_generate "$2/orig/valid" "$DEV_PAIRS" $((SEED + 1000)) "$TRAIN_WORDS" ;;
    test) toy_generate "$2/orig/test" "$TEST_PAIRS" $((SEED + 2000)) "$TEST_WORDS" ;;
  esac
}
FETCH_CORPUS=toy_corpus FETCH_TESTSET=toy_testset

pl_prepare_cli "${COMMON_ARGS[@]}"
pl_enter_env
pl_prepare
