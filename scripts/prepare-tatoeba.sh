#!/usr/bin/env bash
# Prepare the Tatoeba German->English pairs (manythings.org/anki's deu-eng export) for the
# length study: train on the short sentences, test on the long ones and on joined pairs.
#
# Usage: scripts/prepare-tatoeba.sh --from FILE --out-dir DIR [options]
#        scripts/prepare-tatoeba.sh --download --out-dir DIR [options]
#
#   FILE   deu.txt (a pair per line: English<TAB>German; newer exports add a third,
#          attribution column, which is ignored) or the deu-eng.zip holding it.  --download
#          fetches the current export from https://www.manythings.org/anki/deu-eng.zip to
#          DIR/raw/deu-eng.zip first (its sha256 is printed and kept in DIR/split/SOURCE).
#
# Steps (the same as prepare-wmt19-de-en.sh from step 2 on):
#   1. check every line of FILE (a line without a tab, an empty side or bytes that are not
#      UTF-8 stop the script with the file, the line number and what was expected, before
#      anything is written), then split it (scripts/lib/tatoeba.py) into raw text
#      DIR/split/{train,dev,test}.{de,en}, with the counts in DIR/split/counts.json:
#      - by sentence group: pairs sharing an English or a German sentence stay together, so
#        no sentence (nor any of its translations) is on two sides;
#      - test = every group with a side of more than --max-len Moses tokens (the training
#        filter drops them anyway, since subwords only split tokens further), plus a random
#        sample of --test-short-pairs pairs of the other groups, shuffled; dev = another
#        random sample of --dev-pairs; train = the rest.  Reproducible from --seed.
#   2. Moses punctuation normalization and tokenization (sacremoses, -a);
#   3. clean: drop pairs whose length ratio exceeds --clean-ratio;
#   4. joint BPE (subword-nmt, --bpe-merges merges, learned on the training side);
#   5. dictionaries, the training length filter (a pair is dropped when its source OR
#      target has more than --max-len subword tokens) and binarization to
#      DIR/data-bin/lenN for train.sh;
#   6. test sets (build-test-sets.sh): test, concat_seq (its pairs joined two by two) and
#      concat3_seq (three by three), each in DIR/testsets/NAME for translate.sh.
# Every step prints and records its counts (DIR/split/counts.json, DIR/text/clean.txt,
# DIR/lenN/filter.txt).
#
# Options:
#   --from FILE              the export (deu.txt or deu-eng.zip)
#   --download               fetch the current export instead (needs the internet)
#   --out-dir DIR            output directory (default work/tatoeba-de-en in the checkout)
#   --seed N                 seed of the split (default 1)
#   --max-len N              training length limit in subword tokens (default 16: 3,690
#                            pairs of the 2018 export, 2.2%, are beyond it in Moses tokens)
#   --dev-pairs N            (default 1000)
#   --test-short-pairs N     short pairs in the test set (default 2000)
#   --bpe-merges N           joint BPE merge operations (default 10000)
#   --clean-ratio R          maximum length ratio of a training pair (default 9)
#   --threads N              parallel workers (default: all cores)
#   -h, --help               this help
# Re-running skips completed steps; the settings that define the data (the file's content
# by sha256, seed, sizes, limit, merges) are recorded in DIR/config.env and cannot change
# in an existing DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

PAIR=de-en SRC=de TGT=en TITLE="Tatoeba German-English"
TEXTPROC=moses SEG=bpe DEFAULT_SEG_SIZE=10000
DEFAULT_CORPORA=tatoeba DEV_SETS=(valid) TEST_SET=test
DEFAULT_WORK="$PL_REPO/work/tatoeba-de-en" DEFAULT_MAX_LENS=16 DEFAULT_SHARDS=1
TEST_SETS_DEFAULT=test,concat_seq,concat3_seq CONCAT_OF=test  # build-test-sets.sh

FROM="" DOWNLOAD=0 OUT="$DEFAULT_WORK" SEED=1 MAX_LEN=$DEFAULT_MAX_LENS DEV_PAIRS=1000 TEST_SHORT=2000
COMMON_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) pl_help "$0"; exit 0 ;;
    --from) FROM=$2; shift 2 ;;
    --download) DOWNLOAD=1; shift ;;
    --out-dir|--work-dir) OUT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --max-len) MAX_LEN=$2; shift 2 ;;
    --dev-pairs) DEV_PAIRS=$2; shift 2 ;;
    --test-short-pairs) TEST_SHORT=$2; shift 2 ;;
    --bpe-merges|--clean-ratio|--threads) COMMON_ARGS+=("$1" "$2"); shift 2 ;;
    *) pl_die "unknown option '$1' (see --help)" ;;
  esac
done
[[ -n "$FROM" || "$DOWNLOAD" == 1 ]] || pl_die "--from FILE (deu.txt or deu-eng.zip) or --download is required (see --help)"
[[ -z "$FROM" || "$DOWNLOAD" == 0 ]] || pl_die "--from and --download exclude each other"
[[ "$SEED" =~ ^[0-9]+$ ]] || pl_die "--seed: expected a non-negative integer, got '$SEED'"
for option in "--max-len $MAX_LEN" "--dev-pairs $DEV_PAIRS" "--test-short-pairs $TEST_SHORT"; do
  [[ "${option#* }" =~ ^[1-9][0-9]*$ ]] || pl_die "${option% *}: expected a positive integer, got '${option#* }'"
done
pl_refuse_foreign_work "$OUT"
pl_enter_env

# 1. the file: fetched, then checked whole before anything is made from it
if [[ "$DOWNLOAD" == 1 ]]; then
  mkdir -p "$OUT/raw"
  FROM="$OUT/raw/deu-eng.zip"
  [[ -f "$FROM" ]] || pl_py tatoeba.py download --out "$FROM"
fi
PAIRS_SHA=$(pl_py tatoeba.py check --from "$FROM")
FROM="$(cd "$(dirname "$FROM")" && pwd)/$(basename "$FROM")"
SPLIT_ARGS=(--seed "$SEED" --max-len "$MAX_LEN" --dev-pairs "$DEV_PAIRS" --test-short-pairs "$TEST_SHORT")
EXTRA_CONFIG="TATOEBA=pairs sha256 $PAIRS_SHA; split ${SPLIT_ARGS[*]}"

# the fetchers of pl_prepare (called as FETCHER SOURCES WORK PAIR NAME): the split's files
tatoeba_split() {
  local work=$2
  pl_step "$work/.done" split "" "$work/split/train.de" "$work/split/test.en" \
    -- pl_py tatoeba.py split --from "$FROM" --out-dir "$work/split" "${SPLIT_ARGS[@]}"
}
tatoeba_corpus() {
  local lang
  tatoeba_split "$@"
  for lang in de en; do cp "$2/split/train.$lang" "$2/orig/train.$4.$lang"; done
}
tatoeba_testset() {
  local lang split=$4
  [[ "$4" == valid ]] && split=dev
  tatoeba_split "$@"
  for lang in de en; do cp "$2/split/$split.$lang" "$2/orig/$4.$lang"; done
}
FETCH_CORPUS=tatoeba_corpus FETCH_TESTSET=tatoeba_testset

pl_prepare_cli --work-dir "$OUT" --max-len "$MAX_LEN" --offline "${COMMON_ARGS[@]}"
pl_prepare
exec 9>&-  # pl_prepare's lock on DIR, which build-test-sets.sh takes in turn
bash "$PL_SCRIPTS/build-test-sets.sh" --work-dir "$WORK" --threads "$THREADS"
