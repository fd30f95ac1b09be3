#!/usr/bin/env bash
# Translate a test set with a trained model; write the hypotheses in source order.
#
# Usage: scripts/translate.sh --checkpoint CKPT --testset DIR --out-dir OUT [options]
#                             [fairseq-generate args]
#
#   CKPT   e.g. runs/wmt19-de-en/transformer_rel-len100/checkpoint_best.pt
#   DIR    a test set from build-test-sets.sh (PREPARED/testsets/NAME)
#
# Runs fairseq-generate (beam search) over DIR/bin, then undoes the segmentation (BPE "@@ "
# joins / SentencePiece decoding) and the tokenization (sacremoses detokenize) of the data
# the test set was prepared with.  Output length limit: --max-len-a x source length +
# --max-len-b (default 2J+10 subword tokens), capped only by the model's maximum target
# positions (1024 unless the model says otherwise): far beyond the 100 (or 75) tokens of any
# training sentence, so long sources are not cut short by the decoder.
#
# OUT/generate.log  fairseq-generate's output
# OUT/hyp.seg       hypotheses, segmented, line i = source line i
# OUT/hyp.tok       segmentation undone (tokenized text, as the study scored)
# OUT/hyp.txt       detokenized text (what the analysis report scores)
#
# Options:
#   --beam N          (default 5)
#   --lenpen X        length penalty (default 1.0)
#   --max-len-a X     (default 2)
#   --max-len-b N     (default 10)
#   --max-tokens N    tokens per generation batch (default 8000)
#   --user-dir DIR    plugin to load (default: what train.sh recorded next to CKPT)
#   --cpu             run on CPU even if a GPU is visible (CPU runs use OMP_NUM_THREADS=1
#                     unless it is set)
#   --dry-run         print the fairseq-generate command and exit
#   -h, --help        this help
# Every sentence gets its translation, or the script fails: a source longer than the model's
# maximum positions is an error, never an empty hypothesis.
# Re-running does nothing when OUT/translate.done records the same fairseq-generate command
# (checkpoint, test set, beam and every other option) and neither CKPT nor the test set
# changed since; otherwise it translates again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

CKPT="" TESTSET="" OUT="" BEAM=5 LENPEN=1.0 MAXA=2 MAXB=10 MAXTOK=8000 USER_DIR=auto CPU=0 DRY_RUN=0
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) pl_help "$0"; exit 0 ;;
    --checkpoint) CKPT=$2; shift 2 ;;
    --testset) TESTSET=$2; shift 2 ;;
    --out-dir) OUT=$2; shift 2 ;;
    --beam) BEAM=$2; shift 2 ;;
    --lenpen) LENPEN=$2; shift 2 ;;
    --max-len-a) MAXA=$2; shift 2 ;;
    --max-len-b) MAXB=$2; shift 2 ;;
    --max-tokens) MAXTOK=$2; shift 2 ;;
    --user-dir) USER_DIR=$2; shift 2 ;;
    --cpu) CPU=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    --) shift; EXTRA+=("$@"); break ;;
    *) EXTRA+=("$1"); shift ;;  # anything else goes to fairseq-generate
  esac
done
[[ -n "$CKPT" && -n "$TESTSET" && -n "$OUT" ]] || pl_die "--checkpoint, --testset and --out-dir are required (see --help)"
if [[ "$DRY_RUN" != 1 ]]; then
  [[ -f "$CKPT" ]] || pl_die "no checkpoint $CKPT (train it with scripts/train.sh)"
  [[ -f "$TESTSET/.done" && -f "$TESTSET/meta.env" ]] ||
    pl_die "$TESTSET is not a complete test set (build it with scripts/build-test-sets.sh)"
  pl_check_checkpoint "$CKPT"
  # absolute paths, so that the recorded command names the same files from anywhere
  CKPT="$(cd "$(dirname "$CKPT")" && pwd)/$(basename "$CKPT")"
  TESTSET="$(cd "$TESTSET" && pwd)"
fi

SRC=$(pl_conf "$TESTSET/meta.env" SRC)
TGT=$(pl_conf "$TESTSET/meta.env" TGT)
PREP=$(pl_conf "$TESTSET/meta.env" PREP_DIR)
LINES=$(pl_conf "$TESTSET/meta.env" LINES)
if [[ "$USER_DIR" == auto ]]; then
  USER_DIR=$(pl_conf "$(dirname "$CKPT")/train.env" USER_DIR)
fi
[[ "$USER_DIR" == none ]] && USER_DIR=""

DEVICE_ARGS=()
# fairseq-generate uses a GPU when torch sees one, else the CPU.  On CPU: one intra-op thread
# unless OMP_NUM_THREADS says otherwise (see train.sh).
[[ "$CPU" == 1 ]] && DEVICE_ARGS=(--cpu)
if [[ "$CPU" == 1 ]] || ! pl_gpu_listed; then
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
fi

CMD=(fairseq-generate "$TESTSET/bin" --path "$CKPT" ${USER_DIR:+--user-dir "$USER_DIR"}
  --task translation --source-lang "${SRC:-SRC}" --target-lang "${TGT:-TGT}" --gen-subset test
  --beam "$BEAM" --lenpen "$LENPEN" --max-len-a "$MAXA" --max-len-b "$MAXB"
  --max-tokens "$MAXTOK" --seed 1
  "${DEVICE_ARGS[@]}" "${EXTRA[@]}")
if [[ "$DRY_RUN" == 1 ]]; then
  printf '%q ' "${CMD[@]}"; printf '\n'
  exit 0
fi

# The outputs are reused only when the same command wrote them from the same checkpoint and
# test set files (translate.done records the command and is newer than both).
SETTINGS=$(printf '%q ' "${CMD[@]}")
if [[ -f "$OUT/translate.done" && -f "$OUT/hyp.txt" ]]; then
  if [[ "$(cat "$OUT/translate.done")" != "$SETTINGS" ]]; then
    pl_log "$OUT: translated before with other settings; translating again"
  elif [[ "$CKPT" -nt "$OUT/translate.done" || "$TESTSET/.done" -nt "$OUT/translate.done" ]]; then
    pl_log "$OUT: the checkpoint or the test set changed since; translating again"
  else
    pl_log "$OUT: already translated with $CKPT"
    exit 0
  fi
fi
pl_enter_env

mkdir -p "$OUT"
rm -f "$OUT/translate.done"
trap 'rm -f "$OUT/generate.log.tmp.$$"' EXIT
pl_log "translating $TESTSET ($LINES sentences) with $CKPT -> $OUT"
if ! "${CMD[@]}" > "$OUT/generate.log.tmp.$$" 2> "$OUT/generate.err"; then
  tail -n 30 "$OUT/generate.err" >&2
  # fairseq's refusal of a source longer than the model's positions, in the terms of this script
  too_long=$(grep -o 'Size of sample #[0-9]* is invalid.*max_positions=([0-9]*, [0-9]*)' "$OUT/generate.err" | head -n 1)
  [[ -z "$too_long" ]] || pl_die "$CKPT cannot translate $TESTSET: a source is longer than the model's
  positions ($too_long). Translate a test set of shorter sentences, or use a model with
  more positions (the hypothesis of a sentence that was not translated is never left empty)"
  pl_die "fairseq-generate failed (see $OUT/generate.err)"
fi
mv "$OUT/generate.log.tmp.$$" "$OUT/generate.log"
pl_py gen_output.py --log "$OUT/generate.log" --n "$LINES" --out "$OUT/hyp.seg"
pl_deseg "$PREP" "$TGT" "$OUT/hyp.seg" "$OUT/hyp.tok"
pl_detok "$PREP" "$TGT" "$OUT/hyp.tok" "$OUT/hyp.txt"
grep -h '^Generate test with beam' "$OUT/generate.log" >&2 || true
echo "$SETTINGS" > "$OUT/translate.done.tmp.$$"
mv "$OUT/translate.done.tmp.$$" "$OUT/translate.done"
echo "$OUT/hyp.txt"
