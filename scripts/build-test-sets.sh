#!/usr/bin/env bash
# Build the study's test sets, segmented like the training data and binarized for
# fairseq-generate.
#
# Usage: scripts/build-test-sets.sh --work-dir PREPARED [--sets LIST] [options]
#
# Sets (comma-separated):
#   newstest_all   De->En newstest2008-2018 without newstest2015 (the dev set), concatenated
#                  in year order: 28,075 pairs
#   concat_seq     newstest_all's pairs 1+2, 3+4, ... joined with a space (source with source,
#                  target with target); an odd last pair stays alone: 14,038 pairs.  Joined
#                  after segmentation, so a joined line's length is the sum of its parts'.
#                  (For the synthetic pair of prepare-toy.sh and for Tatoeba: their test
#                  set's pairs joined.)
#   concat3_seq    the same, three by three (1+2+3, 4+5+6, ...; Tatoeba's default)
#   newstestYYYY, newsdevYYYY   one WMT set as it is (e.g. newstest2018, newstest2019)
#   any other set whose text the preparation wrote to PREPARED/orig/NAME.{SRC,TGT}
#                  (prepare-toy.sh: valid, test)
# Default: newstest_all,concat_seq,newstest2018 for de-en; newstest2019 for zh-en;
# test,concat_seq for the synthetic pair; test,concat_seq,concat3_seq for Tatoeba
# (PREPARED/testsets.env).
#
# PREPARED is a directory made by prepare-wmt19-de-en.sh, prepare-wmt19-zh-en.sh or
# prepare-toy.sh; its tokenization, segmentation (BPE codes / SentencePiece models) and
# dictionaries are used.
# Each set goes to PREPARED/testsets/NAME/:
#   raw.SRC raw.TGT     the text as distributed (references for BLEU/TER)
#   tok.SRC tok.TGT     normalised (and for De->En Moses-tokenized) text
#   seg.SRC seg.TGT     subword-segmented text (source lengths for the length buckets)
#   bin/                fairseq binary data, split "test", with the training dictionaries
#   meta.env            what translate.sh needs (PREP_DIR, SRC, TGT, LINES)
#
# Options:
#   --work-dir DIR     the prepared directory (required)
#   --sets LIST        sets to build (see above)
#   --local-dir DIR    where the WMT test sets are (plain newstestYYYY.de/.en, the .sgm files
#                      or dev.tgz/test.tgz); default: the directories the preparation used
#   --offline          never download (default: as the preparation)
#   --online           allow downloading dev.tgz/test.tgz from data.statmt.org
#   --threads N        parallel workers
#   -h, --help         this help
# Re-running skips sets that are complete (PREPARED/testsets/NAME/.done, all files present,
# built after the dictionaries and, for the joined sets, after the set they join).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

WORK="" SETS="" LOCAL_DIRS=() OFFLINE=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) pl_help "$0"; exit 0 ;;
    --work-dir) WORK=$2; shift 2 ;;
    --sets) SETS=$2; shift 2 ;;
    --local-dir) LOCAL_DIRS+=("$(cd "$2" && pwd)") || pl_die "--local-dir $2: no such directory"; shift 2 ;;
    --offline) OFFLINE=1; shift ;;
    --online) OFFLINE=0; shift ;;
    --threads) THREADS=$2; shift 2 ;;
    *) pl_die "unknown option $1 (see --help)" ;;
  esac
done
[[ -n "$WORK" ]] || pl_die "--work-dir is required (see --help)"
[[ -f "$WORK/segmentation.env" && -f "$WORK/.done/dict" ]] ||
  pl_die "$WORK is not a prepared directory (run scripts/prepare-wmt19-*.sh first)"
WORK="$(cd "$WORK" && pwd)"
PAIR=$(pl_conf "$WORK/segmentation.env" PAIR)
SRC=$(pl_conf "$WORK/segmentation.env" SRC)
TGT=$(pl_conf "$WORK/segmentation.env" TGT)
TEXTPROC=$(pl_conf "$WORK/segmentation.env" TEXTPROC)
# the preparation's default sets and the set that concat_seq joins
CONCAT_OF=$(pl_conf "$WORK/testsets.env" CONCAT_OF)
[[ -n "$SETS" ]] || SETS=$(pl_conf "$WORK/testsets.env" DEFAULT_SETS)
[[ -n "$SETS" ]] || pl_die "$WORK/testsets.env names no default test sets; pass --sets"
# default sources: those of the preparation
if [[ ${#LOCAL_DIRS[@]} -eq 0 ]]; then
  mapfile -t LOCAL_DIRS < <(sed -n 's/^LOCAL_DIR=\(..*\)$/\1/p' "$WORK/sources.env" 2>/dev/null)
fi
[[ -n "$OFFLINE" ]] || OFFLINE=$(pl_conf "$WORK/sources.env" OFFLINE)
OFFLINE=${OFFLINE:-0}
pl_enter_env

NEWSTEST_ALL_YEARS=(2008 2009 2010 2011 2012 2013 2014 2016 2017 2018)
pl_lock "$WORK"
mkdir -p "$WORK/orig" "$WORK/testsets"
SOURCES="$WORK/testsets/sources.env"  # where this run looks for the WMT test sets
pl_write_sources "$SOURCES" "$OFFLINE" "${LOCAL_DIRS[@]}"

# Text, segmentation and binarization of a set whose raw.* files are in place.
finish_lang() {
  local lang=$1 d=$2
  pl_textproc "$TEXTPROC" "$lang" "$d/tok.$lang" "$(pl_lines "$d/raw.$lang")" < "$d/raw.$lang"
  pl_seg_apply "$WORK" "$lang" "$d/tok.$lang" "$d/seg.$lang"
}
finish_set() { pl_per_lang "$SRC" "$TGT" finish_lang "$1"; }

write_meta() {
  local d=$1 name=$2
  printf 'NAME=%s\nPREP_DIR=%s\nPAIR=%s\nSRC=%s\nTGT=%s\nLINES=%s\n' \
    "$name" "$WORK" "$PAIR" "$SRC" "$TGT" "$(pl_lines "$d/raw.$SRC")" > "$d/meta.env"
  pl_binarize_test "$WORK" "$d"
  pl_same_lines "$d/raw.$SRC" "$d/seg.$SRC" "$name"
  pl_same_lines "$d/raw.$SRC" "$d/raw.$TGT" "$name"
  touch "$d/.done"
  echo "$name: $(pl_lines "$d/raw.$SRC") pairs -> $d"
}

# A set whose text the preparation fetched or generated into WORK/orig.
copy_orig() {
  local d=$1 name=$2 lang
  for lang in "$SRC" "$TGT"; do cp "$WORK/orig/$name.$lang" "$d/raw.$lang"; done
  finish_set "$d"
}

fetch_testset() {
  pl_step "$WORK/.done" "orig.$1" "" "$WORK/orig/$1.$SRC" "$WORK/orig/$1.$TGT" \
    -- pl_get_testset "$SOURCES" "$WORK" "$PAIR" "$1"
}

# A set is complete when its files are all there and its stamp is newer than what it was
# built from: the dictionaries, and for the joined sets the set they join.
set_is_complete() {
  local d=$1 name=$2 lang kind
  [[ -f "$d/.done" && -f "$d/meta.env" && -d "$d/bin" ]] || return 1
  [[ ! "$WORK/.done/dict" -nt "$d/.done" ]] || return 1
  [[ -z "$(joined_by "$name")" || ! "$WORK/testsets/$CONCAT_OF/.done" -nt "$d/.done" ]] || return 1
  for lang in "$SRC" "$TGT"; do
    for kind in raw tok seg; do [[ -f "$d/$kind.$lang" ]] || return 1; done
  done
}

# How many pairs of CONCAT_OF a joined set joins into one (empty: not a joined set).
joined_by() { case "$1" in concat_seq) echo 2 ;; concat3_seq) echo 3 ;; esac; }

build_set() {
  local name=$1 d="$WORK/testsets/$1" y lang parts
  if [[ -n "$(joined_by "$name")" ]]; then
    [[ -n "$CONCAT_OF" ]] || pl_die "$name is not defined for $PAIR (see --help)"
    build_set "$CONCAT_OF"
  fi
  if set_is_complete "$d" "$name"; then
    echo "$name: $(pl_lines "$d/raw.$SRC") pairs (done) -> $d"
    return 0
  fi
  rm -rf "$d"; mkdir -p "$d"
  case "$name" in
    newstest_all)
      [[ "$PAIR" == de-en ]] || pl_die "newstest_all is defined for de-en only"
      for y in "${NEWSTEST_ALL_YEARS[@]}"; do fetch_testset "newstest$y"; done
      for lang in "$SRC" "$TGT"; do
        parts=()
        for y in "${NEWSTEST_ALL_YEARS[@]}"; do parts+=("$WORK/orig/newstest$y.$lang"); done
        cat "${parts[@]}" > "$d/raw.$lang.tmp.$$" && mv "$d/raw.$lang.tmp.$$" "$d/raw.$lang"
      done
      finish_set "$d" ;;
    concat_seq|concat3_seq)
      local whole="$WORK/testsets/$CONCAT_OF" kind
      for lang in "$SRC" "$TGT"; do
        for kind in raw tok seg; do
          pl_concat_lines "$(joined_by "$name")" "$whole/$kind.$lang" "$d/$kind.$lang"
        done
      done ;;
    newstest[0-9][0-9][0-9][0-9]|newsdev[0-9][0-9][0-9][0-9])
      fetch_testset "$name"
      copy_orig "$d" "$name" ;;
    *)
      [[ -f "$WORK/orig/$name.$SRC" && -f "$WORK/orig/$name.$TGT" ]] ||
        pl_die "unknown test set '$name' (see --help)"
      copy_orig "$d" "$name" ;;
  esac
  write_meta "$d" "$name"
}

IFS=, read -r -a SET_LIST <<< "$SETS"
for s in "${SET_LIST[@]}"; do build_set "$s"; done
