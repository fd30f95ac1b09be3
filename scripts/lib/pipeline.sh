# shellcheck shell=bash
# Shared bash for the data, training and reproduction scripts (sourced, never run).
#
#   prepare-wmt19-de-en.sh / prepare-wmt19-zh-en.sh   -> pl_prepare_cli, pl_prepare
#   build-test-sets.sh, translate.sh                   -> pl_textproc, pl_seg_apply, pl_deseg, pl_detok
#   reproduce/table*.sh                                -> pl_recipe_*
#
# Conventions: every step writes its outputs under temporary names (NAME.tmp.PID) and renames
# them when complete; a step counts as done only when its stamp (WORK/.done/STEP), written
# after the outputs, records the same command, its outputs all exist and the steps it depends
# on were not redone since (pl_step).  Re-running a script therefore skips completed steps,
# redoes those whose outputs were deleted, and a failed step leaves nothing a re-run would
# take as complete.

PL_LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PL_SCRIPTS="$(cd "$PL_LIB/.." && pwd)"
PL_REPO="$(cd "$PL_SCRIPTS/.." && pwd)"
THREADS="${THREADS:-$(nproc 2>/dev/null || echo 1)}"
export TQDM_DISABLE=1  # no progress bars from subword-nmt/sacremoses/fairseq in the logs

pl_log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
pl_die() { echo "error: $*" >&2; exit 1; }

# Print the comment block at the top of a script (its --help), without the shebang.
pl_help() {
  awk 'NR == 1 && /^#!/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$1"
}

# Enter the project's Python environment (scripts/lib/env.sh) once per process tree.
pl_enter_env() {
  if [[ -n "${VIRTUAL_ENV:-}" && "${PL_ENV_READY:-}" == "$VIRTUAL_ENV" ]]; then
    return 0
  fi
  # shellcheck disable=SC1091
  source "$PL_LIB/env.sh"
  export PL_ENV_READY="$VIRTUAL_ENV"
}

# Print a command (dry run) or run it.
pl_run() {
  if [[ "${DRY_RUN:-0}" == 1 ]]; then
    printf '+'
    printf ' %q' "$@"
    printf '\n'
  else
    "$@"
  fi
}

pl_py() { python "$PL_LIB/$1" "${@:2}"; }

# Whether nvidia-smi lists a GPU (asked before starting Python, which is slow to start).
pl_gpu_listed() { command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; }

# pl_gpu_count: the GPUs torch sees (torch is asked only where nvidia-smi lists one, so a CPU
# machine starts no Python for it).
pl_gpu_count() {
  pl_gpu_listed || { echo 0; return 0; }
  python -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)" 2>/dev/null ||
    pl_die "could not query torch for GPUs (is the environment set up?)"
}

pl_lines() { wc -l < "$1" | tr -d ' '; }

# pl_same_lines A B [WHAT]: die unless A and B have the same number of lines.
pl_same_lines() {
  local a b
  a=$(pl_lines "$1"); b=$(pl_lines "$2")
  [[ "$a" == "$b" ]] || pl_die "${3:-line count}: $1 has $a lines but $2 has $b"
}

# pl_check_archs OPTION ARCH...: die unless every ARCH is an architecture that fairseq, with
# this plugin loaded, knows (asked before any work, so a typo does not fail hours later).
pl_check_archs() {
  python - "$@" <<'EOF' || exit 1
import logging
import sys

logging.disable(logging.INFO)  # fairseq's import-time notices
import fairseq_relpos  # noqa: F401  (registers the plugin's architectures)
from fairseq.models import ARCH_MODEL_REGISTRY

option, archs = sys.argv[1], sys.argv[2:]
unknown = [arch for arch in archs if arch not in ARCH_MODEL_REGISTRY]
if unknown:
    ours = sorted(a for a, m in ARCH_MODEL_REGISTRY.items() if m.__module__.startswith("fairseq_relpos"))
    sys.exit(f"error: {option}: unknown architecture {', '.join(unknown)} "
             f"(fairseq-relpos has {', '.join(ours)}; fairseq's own, such as transformer, work too)")
EOF
}

# pl_run_systems RUN HINT ARCH...: RUN ARCH for every ARCH, THREADS at a time (one core each:
# OMP_NUM_THREADS=1), its output prefixed with [ARCH]; dies, citing HINT, when one fails.
# RUN sees PL_UNIT_INDEX, the position of its ARCH in the list (0, 1, ...), to share GPUs out.
# Each runs in its own process group, so that a failure or an interrupt stops every system's
# training and translation, not only the shells that started them.
pl_run_systems() {
  local run=$1 hint=$2 arch running=0 index=0
  shift 2
  export OMP_NUM_THREADS=1
  set -m
  trap pl_stop_systems EXIT
  pl_log "training and translating $# systems, $THREADS at a time"
  for arch in "$@"; do
    if (( running == THREADS )); then
      wait -n || pl_die "a system failed ($hint)"
      running=$((running - 1))
    fi
    PL_UNIT_INDEX=$index "$run" "$arch" 2>&1 | sed -u "s/^/[$arch] /" &
    running=$((running + 1)) index=$((index + 1))
  done
  for ((; running > 0; running--)); do
    wait -n || pl_die "a system failed ($hint)"
  done
  trap - EXIT
  set +m
}
pl_stop_systems() { local group; for group in $(jobs -p); do kill -- "-$group" 2> /dev/null || true; done; }

# pl_systems_list LIST: ARCHS from the comma-separated --systems LIST; dies if it is empty or
# names a system twice (each system trains into its own folder).
pl_systems_list() {
  local duplicates
  IFS=, read -r -a ARCHS <<< "$1"
  [[ ${#ARCHS[@]} -gt 0 ]] || pl_die "--systems is empty"
  duplicates=$(printf '%s\n' "${ARCHS[@]}" | sort | uniq -d | paste -sd, -)
  [[ -z "$duplicates" ]] || pl_die "--systems names $duplicates more than once (each system trains into its own folder)"
}

# pl_all_archs: every architecture of fairseq-relpos, one per line, transformer_abs first.
pl_all_archs() {
  python -c "import logging; logging.disable(logging.INFO)
from fairseq_relpos.models.relpos_transformer import ARCHITECTURES
print('\n'.join(ARCHITECTURES))"
}

# pl_check_checkpoint FILE: die unless FILE is a complete torch checkpoint (torch.save writes
# a zip archive, whose last 22 bytes are the end-of-archive record), so that an empty or cut
# short file is named here rather than failing inside torch.load.
pl_check_checkpoint() {
  [[ -s "$1" ]] || pl_die "$1 is empty: not a checkpoint (cut short while saving?); delete it"
  [[ "$(tail -c 22 "$1" | head -c 4 | od -An -tx1 | tr -d ' \n')" == 504b0506 ]] ||
    pl_die "$1 is truncated: not a complete torch checkpoint (cut short while saving?); delete it"
}

# ----------------------------------------------------------------------------------------
# Steps and stamps
# ----------------------------------------------------------------------------------------
# pl_step STAMPS NAME AFTER OUTPUT... -- CMD [ARGS...]: run CMD unless the step is done, then
# write its stamp STAMPS/NAME.  A step is done when its stamp records this same command and
# these outputs, every OUTPUT exists, and the stamp is newer than the stamps of the steps it
# depends on (AFTER: comma-separated step names, or ""), so that a step that is redone has
# the steps after it redone too.  (Call it as a plain command, never inside if/&&/||, so that
# set -e stops on failure.)
pl_step() {
  local stamps=$1 name=$2 after=$3 outputs=() record reason
  shift 3
  while [[ $# -gt 0 && "$1" != -- ]]; do outputs+=("$1"); shift; done
  [[ $# -gt 1 ]] || pl_die "pl_step $name: expected OUTPUT... -- COMMAND"
  shift
  record="$(printf '%q ' "$@")
$(printf 'output %q\n' "${outputs[@]}")"
  reason=$(pl_step_redo_reason "$stamps" "$name" "$after" "$record" "${outputs[@]}")
  if [[ -z "$reason" ]]; then
    pl_log "skip  $name (done)"
    return 0
  fi
  pl_log "start $name ($reason)"
  "$@"
  mkdir -p "$stamps"
  echo "$record" > "$stamps/$name.tmp.$$"
  mv "$stamps/$name.tmp.$$" "$stamps/$name"
  pl_log "done  $name"
}

# pl_step_redo_reason STAMPS NAME AFTER RECORD OUTPUT...: why the step must run (empty: done).
pl_step_redo_reason() {
  local stamps=$1 stamp="$1/$2" after=$3 record=$4 dep output deps=()
  shift 4
  [[ -f "$stamp" ]] || { echo "not done before"; return 0; }
  [[ "$(cat "$stamp")" == "$record" ]] || { echo "done before with another command"; return 0; }
  for output in "$@"; do
    [[ -e "$output" ]] || { echo "$output is missing"; return 0; }
  done
  IFS=, read -r -a deps <<< "$after"
  for dep in "${deps[@]}"; do
    [[ "$stamps/$dep" -nt "$stamp" ]] && { echo "$dep was redone"; return 0; }
  done
  return 0
}

# Remove what failed runs left under temporary names (NAME.tmp.PID, NAME.part stays: resumable).
pl_clean_tmp() {
  find "$1" -name '*.tmp.[0-9]*' -prune -exec rm -rf {} + 2>/dev/null || true
}

# One run at a time per work directory.  WORK/.lock is also what marks a directory as the
# preparation's own (pl_refuse_foreign_work).
pl_lock() {
  mkdir -p "$1"
  exec 9>"$1/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -n 9 || pl_die "another run is using $1 (lock $1/.lock)"
  fi
}

# pl_refuse_foreign_work DIR: die if DIR holds anything but raw/ (corpora put there to be
# found) and was never prepared here: a preparation clears temporary files and rewrites
# what it makes, which must never happen in a folder it does not own.
pl_refuse_foreign_work() {
  local other
  [[ -d "$1" && ! -e "$1/.lock" && ! -e "$1/config.env" ]] || return 0
  other=$(find "$1" -mindepth 1 -maxdepth 1 ! -name raw -printf '%f\n' | sort | awk 'NR <= 3' | paste -sd, -)
  [[ -z "$other" ]] ||
    pl_die "--work-dir $1 holds files that no preparation made, such as $other; choose a new or empty folder (corpora may go in its raw/ beforehand)"
}

# pl_per_lang SRC TGT FUNC ARGS...: FUNC SRC ARGS... and FUNC TGT ARGS..., side by side when
# there is more than one core; fails if either fails.
pl_per_lang() {
  local src=$1 tgt=$2 f=$3 p1 p2 rc=0; shift 3
  if (( THREADS < 2 )); then
    "$f" "$src" "$@"
    "$f" "$tgt" "$@"
    return 0
  fi
  ( "$f" "$src" "$@" ) & p1=$!
  ( "$f" "$tgt" "$@" ) & p2=$!
  wait "$p1" || rc=1
  wait "$p2" || rc=1
  (( rc == 0 )) || pl_die "$f failed (see the messages above)"
}

# pl_conf FILE KEY: the value of KEY=VALUE in FILE (empty if absent).
pl_conf() { [[ -f "$1" ]] || return 0; sed -n "s/^$2=//p" "$1" | tail -n 1; }

# ----------------------------------------------------------------------------------------
# Text processing and segmentation
# ----------------------------------------------------------------------------------------
# Length unit of unsegmented text: characters for Chinese/Japanese, words otherwise.
pl_unit() { case "$1" in zh|ja) echo char ;; *) echo word ;; esac; }

# Worker processes for N lines: parallel start-up only pays off on large inputs.
pl_jobs_for() { if (( $1 > 200000 )); then echo "$THREADS"; else echo 1; fi; }

# pl_textproc MODE LANG OUT [LINES] < IN: moses = normalize punctuation + tokenize (sacremoses,
# with aggressive hyphen splitting and XML escaping, as Moses' tokenizer.perl -a); normalize =
# normalize punctuation only (text that SentencePiece segments); none = as it is (text that
# is already tokenized, such as the synthetic pair of prepare-toy.sh).
pl_textproc() {
  local mode=$1 lang=$2 out=$3 tmp="$3.tmp.$$" j
  j=$(pl_jobs_for "${4:-1000000}")
  case "$mode" in
    moses)  # one sacremoses process running both commands (its CLI chains them)
      sacremoses -q -l "$lang" -j "$j" normalize tokenize -a -x > "$tmp" ;;
    normalize)
      sacremoses -q -l "$lang" -j "$j" normalize > "$tmp" ;;
    none) cat > "$tmp" ;;
    *) pl_die "unknown text processing '$mode'" ;;
  esac
  mv "$tmp" "$out"
}

# pl_seg_apply PREP LANG IN OUT: the training segmentation of PREP (BPE or SentencePiece).
pl_seg_apply() {
  local prep=$1 lang=$2 in=$3 out=$4 tmp="$4.tmp.$$" seg
  seg=$(pl_conf "$prep/segmentation.env" SEG)
  case "$seg" in
    bpe)
      subword-nmt apply-bpe -c "$prep/seg/codes" --vocabulary "$prep/seg/vocab.$lang" \
        --vocabulary-threshold "$(pl_conf "$prep/segmentation.env" BPE_VOCAB_THRESHOLD)" \
        --num-workers "$(pl_jobs_for "$(pl_lines "$in")")" --input "$in" --output "$tmp" ;;
    spm)
      pl_py spm.py encode --model "$prep/seg/spm.$lang.model" --input "$in" --output "$tmp" \
        --threads "$THREADS" ;;
    *) pl_die "$prep/segmentation.env: unknown or missing SEG (is $prep prepared?)" ;;
  esac
  pl_same_lines "$in" "$tmp" "segmentation"
  mv "$tmp" "$out"
}

# pl_deseg PREP LANG IN OUT: undo the segmentation (BPE: join "@@ "; SentencePiece: decode).
pl_deseg() {
  local prep=$1 lang=$2 in=$3 out=$4 tmp="$4.tmp.$$"
  case "$(pl_conf "$prep/segmentation.env" SEG)" in
    bpe) sed -E 's/(@@ )|(@@ ?$)//g' "$in" > "$tmp" ;;
    spm) pl_py spm.py decode --model "$prep/seg/spm.$lang.model" --input "$in" --output "$tmp" ;;
    *) pl_die "$prep/segmentation.env: unknown or missing SEG" ;;
  esac
  mv "$tmp" "$out"
}

# pl_detok PREP LANG IN OUT: undo the tokenization (Moses pipelines) or copy.
pl_detok() {
  local prep=$1 lang=$2 in=$3 out=$4 tmp="$4.tmp.$$"
  case "$(pl_conf "$prep/segmentation.env" TEXTPROC)" in
    moses) sacremoses -q -l "$lang" -j 1 detokenize -x < "$in" > "$tmp" ;;
    *) cp "$in" "$tmp" ;;
  esac
  pl_same_lines "$in" "$tmp" "detokenization"
  mv "$tmp" "$out"
}

# pl_concat_lines N IN OUT: every N lines (1..N, N+1..2N, ...) joined by a space; a shorter
# last group stays as it is.
pl_concat_lines() {
  awk -v n="$1" '{ joined = (NR % n == 1 || n == 1) ? $0 : joined " " $0 }
    NR % n == 0 { print joined } END { if (NR % n != 0) print joined }' "$2" > "$3.tmp.$$"
  mv "$3.tmp.$$" "$3"
}

# pl_binarize_test PREP DIR: fairseq-preprocess DIR/seg.{src,tgt} into DIR/bin (split "test")
# with the dictionaries of PREP.
pl_binarize_test() {
  local prep=$1 dir=$2 src tgt
  src=$(pl_conf "$prep/segmentation.env" SRC); tgt=$(pl_conf "$prep/segmentation.env" TGT)
  rm -rf "$dir/bin.tmp.$$"
  fairseq-preprocess --source-lang "$src" --target-lang "$tgt" --testpref "$dir/seg" \
    --srcdict "$prep/dict/dict.$src.txt" --tgtdict "$prep/dict/dict.$tgt.txt" \
    --destdir "$dir/bin.tmp.$$" --workers "$(pl_jobs_for "$(pl_lines "$dir/seg.$src")")" \
    > "$dir/preprocess.log" 2>&1 ||
    { cat "$dir/preprocess.log" >&2; pl_die "fairseq-preprocess failed for $dir"; }
  rm -rf "${dir:?}/bin"
  mv "$dir/bin.tmp.$$" "$dir/bin"
}

# pl_longer_side TESTSET SRC TGT: TESTSET/longer-side, the longer of each pair's segmented
# sides, whose token count is the pair's length in the reports.
pl_longer_side() {
  paste "$1/seg.$2" "$1/seg.$3" |
    awk -F '\t' '{ print (split($1, s, " ") >= split($2, t, " ") ? $1 : $2) }' > "$1/longer-side"
}

# pl_length_report MARKER OUT TESTSET SRC TGT LABEL=HYP... -- REPORT_ARGS...: the length-bucket
# report (python -m analysis.report) of the systems' hypotheses HYP on the test set TESTSET
# (a build-test-sets.sh folder) into OUT.  A pair's length is its longer side in subword
# tokens: the training filter drops a pair by either side, so that is what "beyond the
# training lengths" means.  OUT/MARKER records the command; a report written by the same
# command after every HYP is kept (and printed) instead of being redone.
pl_length_report() {
  local marker=$1 out=$2 d=$3 src=$4 tgt=$5 systems=() hyps=() cmd hyp current=1
  shift 5
  while [[ $# -gt 0 && "$1" != -- ]]; do systems+=(--system "$1"); hyps+=("${1#*=}"); shift; done
  shift
  pl_longer_side "$d" "$src" "$tgt"
  cmd=(python -m analysis.report --source "$d/seg.$src" --length-file "$d/longer-side"
    --ref "$d/raw.$tgt" "${systems[@]}" "$@" --out-dir "$out")
  [[ "$(cat "$out/$marker" 2> /dev/null)" == "${cmd[*]}" ]] || current=0
  for hyp in "${hyps[@]}"; do [[ "$hyp" -nt "$out/$marker" ]] && current=0; done
  if [[ "$current" == 1 ]]; then
    cat "$out/report.md"
    return 0
  fi
  rm -rf "$out"
  mkdir -p "$out"
  echo "(incomplete)" > "$out/$marker"  # the marker that lets a re-run replace it
  "${cmd[@]}"
  echo "${cmd[*]}" > "$out/$marker"
}

# ----------------------------------------------------------------------------------------
# Data preparation (the shared body of prepare-wmt19-de-en.sh, prepare-wmt19-zh-en.sh and
# prepare-toy.sh)
# ----------------------------------------------------------------------------------------
# A preparation script sets what defines its data: PAIR SRC TGT TEXTPROC SEG DEFAULT_CORPORA
# DEV_SETS TEST_SET DEFAULT_SEG_SIZE, then calls pl_prepare_cli "$@" and pl_prepare.
# Optional: TITLE (what the log calls the data), DEFAULT_WORK, DEFAULT_MAX_LENS,
# DEFAULT_SHARDS; FETCH_CORPUS and FETCH_TESTSET (commands run as CMD SOURCES WORK PAIR
# NAME, writing WORK/orig/train.NAME.LANG and WORK/orig/NAME.LANG; default: pl_get_corpus
# and pl_get_testset, the WMT data through corpora.py); EXTRA_CONFIG (more lines that change
# the data, e.g. how it was generated); TEST_SETS_DEFAULT and CONCAT_OF (build-test-sets.sh's
# default sets and the set concat_seq joins, recorded in WORK/testsets.env).  pl_prepare_cli sets the options of the command
# line: WORK CORPORA LENS SEG_SIZE SHARDS CLEAN_RATIO BPE_VOCAB_THRESHOLD OFFLINE LOCAL_DIRS.
# pl_prepare reads these settings and passes each step what it needs as arguments; the step
# functions below use nothing else (but THREADS).
pl_prepare_cli() {
  WORK="${DEFAULT_WORK:-$PL_REPO/work/wmt19-$PAIR}"
  CORPORA_CSV="$DEFAULT_CORPORA"
  MAX_LENS="${DEFAULT_MAX_LENS:-100}"
  SEG_SIZE="$DEFAULT_SEG_SIZE"
  SHARDS="${DEFAULT_SHARDS:-8}"
  CLEAN_RATIO=9
  BPE_VOCAB_THRESHOLD=50
  OFFLINE=0
  LOCAL_DIRS=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h|--help) pl_help "$0"; exit 0 ;;
      --work-dir) WORK=$2; shift 2 ;;
      --local-dir) LOCAL_DIRS+=("$(cd "$2" && pwd)") || pl_die "--local-dir $2: no such directory"; shift 2 ;;
      --offline) OFFLINE=1; shift ;;
      --corpora) CORPORA_CSV=$2; shift 2 ;;
      --max-len) MAX_LENS=$2; shift 2 ;;
      --bpe-merges|--spm-vocab) SEG_SIZE=$2; shift 2 ;;
      --bpe-vocab-threshold) BPE_VOCAB_THRESHOLD=$2; shift 2 ;;
      --shards) SHARDS=$2; shift 2 ;;
      --clean-ratio) CLEAN_RATIO=$2; shift 2 ;;
      --threads) THREADS=$2; shift 2 ;;
      *) pl_die "unknown option $1 (see --help)" ;;
    esac
  done
  pl_refuse_foreign_work "$WORK"
  mkdir -p "$WORK"
  WORK="$(cd "$WORK" && pwd)"
  IFS=, read -r -a CORPORA <<< "$CORPORA_CSV"
  IFS=, read -r -a LENS <<< "$MAX_LENS"
  [[ ${#CORPORA[@]} -gt 0 ]] || pl_die "--corpora is empty"
  [[ ${#LENS[@]} -gt 0 ]] || pl_die "--max-len is empty (expected comma-separated lengths, e.g. 100,75)"
  for n in "${LENS[@]}" "$SHARDS" "$SEG_SIZE"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || pl_die "expected a positive integer, got '$n'"
  done
}

# pl_write_sources FILE OFFLINE DIR...: where corpora are looked for (each DIR, then WORK/raw
# and the download, unless OFFLINE is 1), for pl_get_corpus and pl_get_testset.  A file, not
# arguments, so that looking elsewhere for the same corpus does not make its step another one.
pl_write_sources() {
  local file=$1 offline=$2 d
  shift 2
  { printf 'OFFLINE=%s\n' "$offline"
    for d in "$@"; do printf 'LOCAL_DIR=%s\n' "$d"; done; } > "$file"
}

# pl_search_args SOURCES: corpora.py's options for what the sources file SOURCES says.
pl_search_args() {
  sed -n 's/^LOCAL_DIR=\(..*\)$/--search\n\1/p' "$1"
  [[ "$(pl_conf "$1" OFFLINE)" == 1 ]] && printf -- '--offline\n'
  return 0
}

# pl_get_corpus SOURCES WORK PAIR NAME / pl_get_testset SOURCES WORK PAIR NAME:
# WORK/orig/train.NAME.LANG / WORK/orig/NAME.LANG, from where SOURCES says, WORK/raw, or
# downloaded.
pl_get_corpus() {
  local search=()
  mapfile -t search < <(pl_search_args "$1")
  pl_py corpora.py corpus --pair "$3" --name "$4" --raw-dir "$2/raw" \
    --out-prefix "$2/orig/train.$4" "${search[@]}"
}

pl_get_testset() {
  local search=()
  mapfile -t search < <(pl_search_args "$1")
  pl_py corpora.py testset --pair "$3" --name "$4" --raw-dir "$2/raw" \
    --out-prefix "$2/orig/$4" "${search[@]}"
}

# pl_text_split WORK TEXTPROC SRC TGT SPLIT PART...: concatenate WORK/orig/PART.LANG and
# normalise/tokenise them into WORK/text/SPLIT.LANG.
pl_text_split() {
  local work=$1 textproc=$2 src=$3 tgt=$4 split=$5
  shift 5
  pl_per_lang "$src" "$tgt" pl_text_split_lang "$work" "$textproc" "$split" "$@"
  pl_same_lines "$work/text/$split.$src" "$work/text/$split.$tgt" "$split"
}

# pl_text_split_lang LANG WORK TEXTPROC SPLIT PART...: one language of pl_text_split.
pl_text_split_lang() {
  local lang=$1 work=$2 textproc=$3 split=$4 part files=()
  shift 4
  for part in "$@"; do files+=("$work/orig/$part.$lang"); done
  cat "${files[@]}" | pl_textproc "$textproc" "$lang" "$work/text/$split.$lang" \
    "$(cat "${files[@]}" | wc -l)"
}

# pl_clean WORK SRC TGT RATIO: WORK/text/train.clean.LANG without empty lines and pairs
# whose length ratio exceeds RATIO.
pl_clean() {
  local work=$1 src=$2 tgt=$3 ratio=$4
  pl_py filter_pairs.py --src "$work/text/train.$src" --tgt "$work/text/train.$tgt" \
    --out-src "$work/text/train.clean.$src" --out-tgt "$work/text/train.clean.$tgt" \
    --min-len 1 --max-ratio "$ratio" --src-unit "$(pl_unit "$src")" \
    --tgt-unit "$(pl_unit "$tgt")" --label "cleaning (empty lines, length ratio > $ratio)" \
    --report "$work/text/clean.txt"
}

# pl_seg_learn WORK PAIR SRC TGT TEXTPROC SEG SIZE VOCAB_THRESHOLD: learn the segmentation
# (joint BPE with SIZE merges, or a SentencePiece model of SIZE pieces per language) into
# WORK/seg, and record it in WORK/segmentation.env for the scripts that apply it.
pl_seg_learn() {
  local work=$1 pair=$2 src=$3 tgt=$4 textproc=$5 seg=$6 size=$7 threshold=$8 d="$1/seg" lang cov
  rm -rf "$d"; mkdir -p "$d"
  case "$seg" in
    bpe)
      subword-nmt learn-joint-bpe-and-vocab --input "$work/text/train.clean.$src" \
        "$work/text/train.clean.$tgt" -s "$size" -o "$d/codes.tmp.$$" \
        --write-vocabulary "$d/vocab.$src.tmp.$$" "$d/vocab.$tgt.tmp.$$" \
        --num-workers "$(pl_jobs_for "$(pl_lines "$work/text/train.clean.$src")")"
      mv "$d/vocab.$src.tmp.$$" "$d/vocab.$src"; mv "$d/vocab.$tgt.tmp.$$" "$d/vocab.$tgt"
      mv "$d/codes.tmp.$$" "$d/codes" ;;
    spm)
      for lang in "$src" "$tgt"; do
        case "$lang" in zh|ja) cov=0.9995 ;; *) cov=1.0 ;; esac
        pl_py spm.py train --input "$work/text/train.clean.$lang" --model-prefix "$d/spm.$lang" \
          --vocab-size "$size" --character-coverage "$cov" --threads "$THREADS" \
          --soft-vocab-limit
      done ;;
  esac
  printf 'PAIR=%s\nSRC=%s\nTGT=%s\nTEXTPROC=%s\nSEG=%s\nSEG_SIZE=%s\nBPE_VOCAB_THRESHOLD=%s\n' \
    "$pair" "$src" "$tgt" "$textproc" "$seg" "$size" "$threshold" > "$work/segmentation.env"
}

# pl_seg_split WORK SRC TGT SPLIT: WORK/seg/SPLIT.LANG, segmented (training: the cleaned text).
pl_seg_split() {
  local work=$1 src=$2 tgt=$3 split=$4
  pl_per_lang "$src" "$tgt" pl_seg_split_lang "$work" "$split"
}

pl_seg_split_lang() {  # LANG WORK SPLIT
  local lang=$1 work=$2 split=$3 in="$2/text/$3.$1"
  [[ "$split" == train ]] && in="$work/text/train.clean.$lang"
  pl_seg_apply "$work" "$lang" "$in" "$work/seg/$split.$lang"
}

# pl_dicts WORK SRC TGT: fairseq's dictionaries of the segmented training data, WORK/dict.
pl_dicts() {
  local work=$1 src=$2 tgt=$3
  rm -rf "$work/dict" "$work/dict.tmp.$$"
  fairseq-preprocess --source-lang "$src" --target-lang "$tgt" --trainpref "$work/seg/train" \
    --destdir "$work/dict.tmp.$$" --dict-only \
    --workers "$(pl_jobs_for "$(pl_lines "$work/seg/train.$src")")" > "$work/dict.log" 2>&1 ||
    { cat "$work/dict.log" >&2; pl_die "fairseq-preprocess --dict-only failed"; }
  mv "$work/dict.tmp.$$" "$work/dict"
}

# pl_length_filter WORK SRC TGT N: WORK/lenN/train.LANG, the training pairs whose source and
# target both have at most N subword tokens.
pl_length_filter() {
  local work=$1 src=$2 tgt=$3 n=$4 d="$1/len$4"
  mkdir -p "$d"
  pl_py filter_pairs.py --src "$work/seg/train.$src" --tgt "$work/seg/train.$tgt" \
    --out-src "$d/train.$src" --out-tgt "$d/train.$tgt" --max-len "$n" \
    --label "length filter (source or target > $n subword tokens)" --report "$d/filter.txt"
}

# pl_binarize WORK SRC TGT N SHARDS: WORK/data-bin/lenN/shard0..SHARDS-1 (valid, test in shard0).
pl_binarize() {
  local work=$1 src=$2 tgt=$3 n=$4 shards=$5
  mkdir -p "$work/data-bin"
  pl_py binarize.py --source-lang "$src" --target-lang "$tgt" \
    --srcdict "$work/dict/dict.$src.txt" --tgtdict "$work/dict/dict.$tgt.txt" \
    --trainpref "$work/len$n/train" --validpref "$work/seg/valid" --testpref "$work/seg/test" \
    --shards "$shards" --destdir "$work/data-bin/len$n" \
    --workers "$(pl_jobs_for "$(pl_lines "$work/len$n/train.$src")")" \
    > "$work/data-bin/len$n.log" 2>&1 ||
    { tail -n 30 "$work/data-bin/len$n.log" >&2; pl_die "binarization failed (len$n)"; }
}

# pl_check_config WORK WANTED BUILT_GLOB: record WANTED (the settings that change the data) in
# WORK/config.env, or die if WORK was built (BUILT_GLOB matches a stamp) with other ones.
pl_check_config() {
  local work=$1 want=$2 built=$3 conf="$1/config.env"
  if [[ -f "$conf" ]] && compgen -G "$built" > /dev/null; then
    if [[ "$(cat "$conf")" != "$want" ]]; then
      diff <(echo "$want") "$conf" | sed 's/^/  /' >&2 || true
      pl_die "$work was prepared with other settings (< now, > $conf); use another --work-dir or delete it"
    fi
  else
    echo "$want" > "$conf.tmp.$$"
    mv "$conf.tmp.$$" "$conf"
  fi
}

pl_prepare() {
  local work=$WORK stamps="$WORK/.done" src=$SRC tgt=$TGT
  local fetch_corpus=${FETCH_CORPUS:-pl_get_corpus} fetch_testset=${FETCH_TESTSET:-pl_get_testset}
  local c s n train_parts=() fetched=() dev_fetched=() seg_outputs=() built
  pl_lock "$work"
  pl_clean_tmp "$work"
  mkdir -p "$work/raw" "$work/orig" "$work/text"
  # a conflict only once something beyond fetching the corpora has been built (or anything
  # at all, when the corpora are generated from settings in EXTRA_CONFIG)
  built="$stamps/[!o]*"
  [[ -n "${EXTRA_CONFIG:-}" ]] && built="$stamps/*"
  pl_check_config "$work" "PAIR=$PAIR
CORPORA=$CORPORA_CSV
DEV_SETS=${DEV_SETS[*]}
TEST_SET=$TEST_SET
TEXTPROC=$TEXTPROC
SEG=$SEG
SEG_SIZE=$SEG_SIZE
BPE_VOCAB_THRESHOLD=$BPE_VOCAB_THRESHOLD
CLEAN_RATIO=$CLEAN_RATIO
SHARDS=$SHARDS${EXTRA_CONFIG:+
$EXTRA_CONFIG}" "$built"
  # where the data came from, and which test sets it has, for build-test-sets.sh
  pl_write_sources "$work/sources.env" "$OFFLINE" "${LOCAL_DIRS[@]}"
  printf 'DEFAULT_SETS=%s\nCONCAT_OF=%s\n' "${TEST_SETS_DEFAULT:-$TEST_SET}" "${CONCAT_OF:-}" \
    > "$work/testsets.env"
  pl_log "preparing ${TITLE:-WMT19 $PAIR} in $work (corpora: ${CORPORA[*]}; max lengths: ${LENS[*]})"
  for c in "${CORPORA[@]}"; do
    pl_step "$stamps" "orig.train.$c" "" "$work/orig/train.$c.$src" "$work/orig/train.$c.$tgt" \
      -- "$fetch_corpus" "$work/sources.env" "$work" "$PAIR" "$c"
    train_parts+=("train.$c"); fetched+=("orig.train.$c")
  done
  for s in "${DEV_SETS[@]}" "$TEST_SET"; do
    pl_step "$stamps" "orig.$s" "" "$work/orig/$s.$src" "$work/orig/$s.$tgt" \
      -- "$fetch_testset" "$work/sources.env" "$work" "$PAIR" "$s"
  done
  for s in "${DEV_SETS[@]}"; do dev_fetched+=("orig.$s"); done
  pl_step "$stamps" text.train "$(IFS=,; echo "${fetched[*]}")" \
    "$work/text/train.$src" "$work/text/train.$tgt" \
    -- pl_text_split "$work" "$TEXTPROC" "$src" "$tgt" train "${train_parts[@]}"
  pl_step "$stamps" text.valid "$(IFS=,; echo "${dev_fetched[*]}")" \
    "$work/text/valid.$src" "$work/text/valid.$tgt" \
    -- pl_text_split "$work" "$TEXTPROC" "$src" "$tgt" valid "${DEV_SETS[@]}"
  pl_step "$stamps" text.test "orig.$TEST_SET" "$work/text/test.$src" "$work/text/test.$tgt" \
    -- pl_text_split "$work" "$TEXTPROC" "$src" "$tgt" test "$TEST_SET"
  pl_step "$stamps" clean text.train "$work/text/train.clean.$src" "$work/text/train.clean.$tgt" \
    "$work/text/clean.txt" -- pl_clean "$work" "$src" "$tgt" "$CLEAN_RATIO"
  case "$SEG" in
    bpe) seg_outputs=("$work/seg/codes" "$work/seg/vocab.$src" "$work/seg/vocab.$tgt") ;;
    spm) seg_outputs=("$work/seg/spm.$src.model" "$work/seg/spm.$tgt.model") ;;
  esac
  pl_step "$stamps" seg.learn clean "$work/segmentation.env" "${seg_outputs[@]}" \
    -- pl_seg_learn "$work" "$PAIR" "$src" "$tgt" "$TEXTPROC" "$SEG" "$SEG_SIZE" "$BPE_VOCAB_THRESHOLD"
  pl_step "$stamps" seg.train seg.learn "$work/seg/train.$src" "$work/seg/train.$tgt" \
    -- pl_seg_split "$work" "$src" "$tgt" train
  for s in valid test; do
    pl_step "$stamps" "seg.$s" "seg.learn,text.$s" "$work/seg/$s.$src" "$work/seg/$s.$tgt" \
      -- pl_seg_split "$work" "$src" "$tgt" "$s"
  done
  pl_step "$stamps" dict seg.train "$work/dict/dict.$src.txt" "$work/dict/dict.$tgt.txt" \
    -- pl_dicts "$work" "$src" "$tgt"
  for n in "${LENS[@]}"; do
    pl_step "$stamps" "filter.len$n" seg.train "$work/len$n/train.$src" "$work/len$n/train.$tgt" \
      "$work/len$n/filter.txt" -- pl_length_filter "$work" "$src" "$tgt" "$n"
    pl_step "$stamps" "bin.len$n" "filter.len$n,dict,seg.valid,seg.test" \
      "$work/data-bin/len$n/shard0" "$work/data-bin/len$n/shard$((SHARDS - 1))" \
      -- pl_binarize "$work" "$src" "$tgt" "$n" "$SHARDS"
  done
  echo "== ${TITLE:-WMT19 $PAIR} prepared in $work"
  cat "$work/text/clean.txt"
  for n in "${LENS[@]}"; do
    cat "$work/len$n/filter.txt"
    echo "   training data: $work/data-bin/len$n  (shard0..shard$((SHARDS - 1)); valid/test in shard0)"
  done
}

# ----------------------------------------------------------------------------------------
# Reproduction recipes (reproduce/table*.sh)
# ----------------------------------------------------------------------------------------
# Tiny settings for SMOKE=1: the same steps on a few thousand lines, with 1+1-layer models.
PL_SMOKE_TRAIN=(--encoder-layers 1 --decoder-layers 1 --encoder-embed-dim 32
  --decoder-embed-dim 32 --encoder-ffn-embed-dim 64 --decoder-ffn-embed-dim 64
  --encoder-attention-heads 2 --decoder-attention-heads 2 --max-update 16
  --batch-tokens 1200 --log-interval 5)
PL_SMOKE_TRANSLATE=(--beam 2 --max-tokens 30000 --max-len-a 1.2 --max-len-b 5)
PL_SMOKE_TEST_LINES=30

# A recipe is: pl_recipe_cli "$@"; pl_recipe_prepare; pl_recipe_system per system (and
# pl_recipe_extra_systems); pl_recipe_report; pl_recipe_done.  pl_recipe_cli sets the
# recipe's command line (WORK_ROOT RUNS_ROOT SMOKE DRY_RUN OFFLINE LOCAL_DIRS EXTRA_SYSTEMS),
# which the other pl_recipe_* functions read; pl_recipe_prepare starts the list SYSTEMS,
# pl_recipe_system adds to it, pl_recipe_report scores it and adds its folder to REPORTS.
pl_recipe_cli() {
  SMOKE="${SMOKE:-0}"
  DRY_RUN=0
  OFFLINE=0
  LOCAL_DIRS=()
  EXTRA_SYSTEMS=()
  WORK_ROOT="$PL_REPO/work"
  RUNS_ROOT="$PL_REPO/runs"
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h|--help) pl_help "$0"; exit 0 ;;
      --dry-run) DRY_RUN=1; shift ;;
      --work-root) WORK_ROOT=$2; shift 2 ;;
      --runs-root) RUNS_ROOT=$2; shift 2 ;;
      --local-dir) LOCAL_DIRS+=("$2"); shift 2 ;;
      --offline) OFFLINE=1; shift ;;
      --system) EXTRA_SYSTEMS+=("$2"); shift 2 ;;
      --threads) THREADS=$2; shift 2 ;;
      *) pl_die "unknown option $1 (see --help)" ;;
    esac
  done
  if [[ "$SMOKE" == 1 ]]; then
    WORK_ROOT="$WORK_ROOT/smoke"
    RUNS_ROOT="$RUNS_ROOT/smoke"
    SMOKE_DATA="${SMOKE_DATA:-$PL_REPO/../shared/data/wmt-newstest}"
    if [[ "$DRY_RUN" != 1 && ! -d "$SMOKE_DATA" ]]; then
      pl_die "SMOKE=1 needs a small local data directory laid out like wmt-newstest
  (de-en/newstestYYYY.{de,en}, zh-en/newstestYYYY.{zh,en}); set SMOKE_DATA (tried $SMOKE_DATA)"
    fi
  fi
  local spec rest archs=()
  for spec in "${EXTRA_SYSTEMS[@]}"; do
    rest=${spec#*=}
    [[ "$spec" == *=*@* && -n "${spec%%=*}" && -n "${rest%@*}" && "${rest##*@}" =~ ^[0-9]+$ ]] ||
      pl_die "--system wants LABEL=ARCH@MAXLEN, got '$spec'"
    archs+=("${rest%@*}")
  done
  export DRY_RUN THREADS
  if [[ "$DRY_RUN" != 1 ]]; then
    pl_enter_env
    if [[ ${#archs[@]} -gt 0 ]]; then pl_check_archs --system "${archs[@]}"; fi
    if [[ -n "${RELPOS_ARCH_OVERRIDE:-}" ]]; then pl_check_archs RELPOS_ARCH_OVERRIDE "$RELPOS_ARCH_OVERRIDE"; fi
  fi
  if [[ "$SMOKE" == 1 ]]; then pl_log "SMOKE=1: tiny data and models (work: $WORK_ROOT, runs: $RUNS_ROOT)"; fi
  REPORTS=()
}

# pl_cut_lines FROM-PREFIX FIRST LAST OUT-PREFIX LANG...: lines FIRST..LAST of FROM-PREFIX.LANG
# to OUT-PREFIX.LANG, for each LANG.
pl_cut_lines() {
  local from=$1 first=$2 last=$3 out=$4 lang
  shift 4
  for lang in "$@"; do sed -n "$first,${last}p" "$from.$lang" > "$out.$lang"; done
}

# pl_smoke_standin SMOKE_DATA PAIR DIR: stand-in corpora cut from SMOKE_DATA, named like the
# real ones.
pl_smoke_standin() {
  local smoke_data=$1 pair=$2 dir=$3 n=$PL_SMOKE_TEST_LINES f y
  local src=${pair%-*} tgt=${pair#*-} sd="$1/$2" tmp="$3.tmp.$$"
  [[ -f "$dir/.done" ]] && return 0
  rm -rf "$tmp"; mkdir -p "$tmp"
  case "$pair" in
    de-en)  # training: newstest2019 (not part of any test set used here), 4 x 500 lines
      pl_cut_lines "$sd/newstest2019" 1 500 "$tmp/commoncrawl.de-en" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2019" 501 1000 "$tmp/europarl-v9.de-en" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2019" 1001 1500 "$tmp/news-commentary-v14.de-en" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2019" 1501 2000 "$tmp/rapid2019.de-en" "$src" "$tgt"
      for y in 2008 2009 2010 2011 2012 2013 2014 2015 2016 2017 2018; do
        pl_cut_lines "$sd/newstest$y" 1 "$n" "$tmp/newstest$y" "$src" "$tgt"
      done ;;
    zh-en)  # training: newstest2018 (3981 lines) split in three
      pl_cut_lines "$sd/newstest2018" 1 1300 "$tmp/news-commentary-v14.en-zh" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2018" 1301 2600 "$tmp/UNv1.0.en-zh" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2018" 2601 3981 "$tmp/cwmt" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2017" 1 "$n" "$tmp/newsdev2017" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2017" $((n + 1)) $((2 * n)) "$tmp/newstest2017" "$src" "$tgt"
      pl_cut_lines "$sd/newstest2019" 1 "$n" "$tmp/newstest2019" "$src" "$tgt" ;;
  esac
  for f in "$tmp"/*; do [[ -s "$f" ]] || pl_die "smoke stand-in $f is empty (SMOKE_DATA=$smoke_data)"; done
  touch "$tmp/.done"
  rm -rf "$dir"; mv "$tmp" "$dir"
}

pl_recipe_prep_dir() { echo "$WORK_ROOT/wmt19-$1"; }

# pl_recipe_prepare PAIR LENS(comma list) SETS(comma list): data + test sets for a pair;
# starts a new list of SYSTEMS.
pl_recipe_prepare() {
  local pair=$1 lens=$2 sets=$3 prep args=() d spec len
  SYSTEMS=()  # the systems of the report that follows
  prep=$(pl_recipe_prep_dir "$pair")
  for spec in "${EXTRA_SYSTEMS[@]}"; do  # length limits that --system asks for
    len=${spec##*@}
    [[ ",$lens," == *",$len,"* || ! "$len" =~ ^[0-9]+$ ]] || lens+=",$len"
  done
  for d in "${LOCAL_DIRS[@]}"; do args+=(--local-dir "$d"); done
  [[ "$OFFLINE" == 1 ]] && args+=(--offline)
  if [[ "$SMOKE" == 1 ]]; then
    local standin="$WORK_ROOT/standin-$pair"
    if [[ "$DRY_RUN" == 1 ]]; then echo "+ (cut SMOKE stand-in corpora from $SMOKE_DATA/$pair into $standin)"
    else pl_smoke_standin "$SMOKE_DATA" "$pair" "$standin"; fi
    args+=(--local-dir "$standin" --offline --threads "$THREADS")
    case "$pair" in
      de-en) args+=(--bpe-merges 400) ;;
      zh-en) args+=(--spm-vocab 1000) ;;
    esac
  fi
  pl_run bash "$PL_SCRIPTS/prepare-wmt19-$pair.sh" --work-dir "$prep" \
    --max-len "$lens" "${args[@]}"
  pl_run bash "$PL_SCRIPTS/build-test-sets.sh" --work-dir "$prep" --sets "$sets"
}

# pl_recipe_system PAIR LABEL ARCH LEN SET: train (if needed) and translate SET.
# Appends "LABEL=translation directory" to SYSTEMS, the systems of the next report.
pl_recipe_system() {
  local pair=$1 label=$2 arch=$3 len=$4 set=$5 prep save targs=() xargs=() extra=()
  prep=$(pl_recipe_prep_dir "$pair")
  [[ -n "${RELPOS_ARCH_OVERRIDE:-}" ]] && arch=$RELPOS_ARCH_OVERRIDE
  save="$RUNS_ROOT/wmt19-$pair/$arch-len$len"
  [[ "$SMOKE" == 1 ]] && { targs+=("${PL_SMOKE_TRAIN[@]}"); xargs+=("${PL_SMOKE_TRANSLATE[@]}"); }
  if [[ -n "${TRAIN_EXTRA_ARGS:-}" ]]; then read -r -a extra <<< "$TRAIN_EXTRA_ARGS"; targs+=("${extra[@]}"); fi
  pl_log "system $label: --arch $arch, training data max length $len -> $save"
  pl_run bash "$PL_SCRIPTS/train.sh" --data "$prep/data-bin/len$len" --arch "$arch" \
    --save-dir "$save" "${targs[@]}"
  pl_run bash "$PL_SCRIPTS/translate.sh" --checkpoint "$save/checkpoint_best.pt" \
    --testset "$prep/testsets/$set" --out-dir "$save/$set" "${xargs[@]}"
  SYSTEMS+=("$label=$save/$set")
}

# Extra systems from --system LABEL=ARCH@LEN (e.g. --system "T5@100=transformer_t5@100").
pl_recipe_extra_systems() {
  local pair=$1 set=$2 spec label rest arch len
  for spec in "${EXTRA_SYSTEMS[@]}"; do  # checked by pl_recipe_cli
    label=${spec%%=*}; rest=${spec#*=}; arch=${rest%@*}; len=${rest##*@}
    pl_recipe_system "$pair" "$label" "$arch" "$len" "$set"
  done
}

# pl_recipe_report NAME PAIR SET BASELINE: the analysis report over SYSTEMS.
# Scored with sacreBLEU's 13a tokenization of the detokenized output against the raw
# references (REPORT_TOKENIZE=none: the Moses-tokenized output against the Moses-tokenized
# references, the study's "BLEU on tokenized text"; meaningful for De->En).
pl_recipe_report() {
  local name=$1 pair=$2 set=$3 baseline=$4 prep src tgt out args=() extra=() s hyp ref tok
  prep=$(pl_recipe_prep_dir "$pair")
  src=${pair%-*}; tgt=${pair#*-}
  out="$RUNS_ROOT/reports/$name"
  tok=${REPORT_TOKENIZE:-13a}
  hyp=hyp.txt ref="$prep/testsets/$set/raw.$tgt"
  [[ "$tok" == none ]] && { hyp=hyp.tok; ref="$prep/testsets/$set/tok.$tgt"; }
  for s in "${SYSTEMS[@]}"; do args+=(--system "$s/$hyp"); done
  [[ "$SMOKE" == 1 ]] && args+=(--bootstrap 50)
  if [[ -n "${REPORT_EXTRA_ARGS:-}" ]]; then read -r -a extra <<< "$REPORT_EXTRA_ARGS"; args+=("${extra[@]}"); fi
  if [[ "${SKIP_REPORT:-0}" == 1 ]]; then
    pl_log "SKIP_REPORT=1: not running the analysis report for $name"
    return 0
  fi
  if [[ "$DRY_RUN" != 1 ]] && ! python -c "import analysis.report" 2>/dev/null; then
    pl_die "the analysis report (python -m analysis.report) is not available; install the
  project (scripts/lib/env.sh) or set SKIP_REPORT=1 to stop after the translations"
  fi
  pl_run python -m analysis.report --source "$prep/testsets/$set/seg.$src" --ref "$ref" \
    "${args[@]}" --baseline "$baseline" --edges 25,50,75,100 --train-limit 100 \
    --tokenize "$tok" --title "$name ($pair, $set)" --out-dir "$out"
  REPORTS+=("$out")
}

pl_recipe_done() {
  local r
  [[ "$DRY_RUN" == 1 ]] && return 0
  for r in "${REPORTS[@]}"; do echo "report: $r/report.md"; done
}
