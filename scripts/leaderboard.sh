#!/usr/bin/env bash
# The length-generalization leaderboard: every position scheme trained on the demo's
# synthetic pair with several seeds, ranked by BLEU beyond the training lengths.
#
# Usage: bash scripts/leaderboard.sh [options]
#
# The demo's steps (scripts/lib/demo.sh), for every architecture and training seed:
#   1. the demo's data and test sets, in OUT/data (shared with demo.sh);
#   2. each system trained with the training seeds --seed, --seed + 1, ... (--seeds of them)
#      on the demo's budget, then both test sets translated.  The first seed is the demo's
#      own model, in OUT/ARCH (a model the demo trained is reused); the others go to
#      OUT/ARCH-seedS.  As many at a time as there are cores, one core each; seed 1 of every
#      system first.  A system that fails (a training that diverges, a model that refuses
#      long inputs) does not stop the others: its last error is kept in
#      OUT/ARCH[-seedS]/failed and the board says so (each unit's output is in
#      OUT/leaderboard/logs/);
#   3. python -m analysis.leaderboard per test set, into OUT/leaderboard/SET/: board.md
#      (printed), board.csv, board.json, board.tex, bleu.png and length_ratio.png.  One
#      table: systems ranked by BLEU on the pairs beyond the training limit, with BLEU, TER
#      and the hypothesis/reference length ratio per length bucket as mean ± sd over seeds,
#      the parameter count, the step time relative to the first system (the baseline), and
#      a paired bootstrap test against the baseline per bucket over the seeds pooled.
# Re-running continues where a run stopped: finished models and translations are reused
# (train.sh resumes an interrupted training); a failed system is tried again.
#
# Options:
#   --systems LIST     comma-separated architectures, the first is the baseline (default:
#                      every architecture of fairseq-relpos, transformer_abs first)
#   --seeds N          training seeds per system (default 2)
#   --updates N        training updates per system (default 3000, the demo's)
#   --train-limit N    longest training pair, in subword tokens (default 50)
#   --seed N           seed of the corpus and the first training seed (default 1)
#   --quick            the demo's --quick data and at most 200 updates (for CI; its numbers
#                      show nothing)
#   --out-dir DIR      the demo's folder (default runs/demo), whose data and models are reused
#   --threads N        systems trained at a time, one core each (default: all cores)
#   --gpus N           train and translate on N GPUs instead (fp16), --threads systems at a
#                      time shared out among them; a model trained on the other device is
#                      trained again (default 0: CPU only, the same translations on every run)
#   -h, --help         this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"
source "$PL_LIB/demo.sh"

SYSTEMS=all
demo_cli "$@"
SEEDS=2
set -- "${DEMO_REST[@]}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seeds) SEEDS=${2:-}; shift 2 || pl_die "--seeds needs a value" ;;
    *) pl_die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || pl_die "--seeds: expected a positive integer, got '$SEEDS'"
if [[ "$SYSTEMS" == all ]]; then
  pl_enter_env
  mapfile -t ARCHS < <(pl_all_archs)
fi
TRAIN_SEEDS=()
for ((k = 0; k < SEEDS; k++)); do TRAIN_SEEDS+=($((SEED + k))); done
# unit_dir ARCH TRAIN_SEED: where that model goes (the demo's folder for the first seed)
unit_dir() { if [[ "$2" == "$SEED" ]]; then echo "$OUT/$1"; else echo "$OUT/$1-seed$2"; fi; }

demo_refuse_unless_ours "$OUT/data" demo.settings
for arch in "${ARCHS[@]}"; do
  for seed in "${TRAIN_SEEDS[@]}"; do demo_refuse_unless_ours "$(unit_dir "$arch" "$seed")" demo.settings; done
done
[[ ! -e "$OUT/leaderboard" || -f "$OUT/leaderboard/demo.command" ]] ||
  pl_die "$OUT/leaderboard exists and was not made by leaderboard.sh; choose another --out-dir or move it away"

START=$SECONDS
demo_prepare
mkdir -p "$OUT/leaderboard/logs"
echo "bash scripts/leaderboard.sh $*" > "$OUT/leaderboard/demo.command"

# A unit is one system with one training seed.  Its output is also kept in
# OUT/leaderboard/logs/ARCH-seedS.log; a failure is recorded with its last error, not fatal.
run_unit() {
  local arch=${1%@*} seed=${1#*@} dir log
  dir=$(unit_dir "$arch" "$seed")
  log="$OUT/leaderboard/logs/$arch-seed$seed.log"
  rm -f "$dir/failed"
  # a subshell of its own, which stops at the first error and exits with the pipeline's status
  ( demo_system "$arch" "$seed" "$dir" 2>&1 | tee "$log" ) &
  if wait $!; then return 0; fi
  mkdir -p "$dir"
  echo "seed $seed: $(grep -E "[Ee]rror" "$log" | tail -n 1 | cut -c1-300)" > "$dir/failed"
  pl_log "$arch: $(cat "$dir/failed"); the other systems go on (see $log)"
}
UNITS=()
for seed in "${TRAIN_SEEDS[@]}"; do
  for arch in "${ARCHS[@]}"; do UNITS+=("$arch@$seed"); done
done
pl_run_systems run_unit "see $OUT/*/train.log and $OUT/*/*/generate.err" "${UNITS[@]}"
demo_phase_took "training and translating ${#ARCHS[@]} systems x ${#TRAIN_SEEDS[@]} seeds"

SEEDS_TEXT="$SEEDS seed$( ((SEEDS == 1)) || echo s)" DEVICE_TEXT=""
((GPUS == 0)) || DEVICE_TEXT=", on GPUs (fp16)"
for set in "${DEMO_TEST_SETS[@]}"; do
  d="$DATA/testsets/$set"
  pl_longer_side "$d" src tgt
  args=()
  for arch in "${ARCHS[@]}"; do
    hyps=() logs=() failures=()
    for seed in "${TRAIN_SEEDS[@]}"; do
      dir=$(unit_dir "$arch" "$seed")
      if [[ -f "$dir/failed" ]]; then failures+=("$(cat "$dir/failed")"); else hyps+=("$dir/$set/hyp.txt"); fi
      [[ -f "$dir/train.log" ]] && logs+=("$dir/train.log")
    done
    if (( ${#hyps[@]} )); then args+=(--system "$arch=$(IFS=,; echo "${hyps[*]}")"); fi
    if (( ${#logs[@]} )); then args+=(--train-log "$arch=$(IFS=,; echo "${logs[*]}")"); fi
    if (( ${#failures[@]} )); then
      args+=(--failed "$arch=$(printf '%s; ' "${failures[@]}" | sed 's/; $//')")
    fi
  done
  python -m analysis.leaderboard --source "$d/seg.src" --length-file "$d/longer-side" \
    --ref "$d/raw.tgt" "${args[@]}" --baseline "${ARCHS[0]}" --train-limit "$LIMIT" \
    --edges "$(demo_edges "$set")" --tokenize none --bootstrap 1000 --seed "$SEED" \
    --title "Leaderboard, demo $set: trained on pairs of up to $LIMIT subword tokens, $SEEDS_TEXT$DEVICE_TEXT" \
    --out-dir "$OUT/leaderboard/$set"
done
demo_phase_took "the boards"
pl_log "done in $((SECONDS - START)) s"
for set in "${DEMO_TEST_SETS[@]}"; do echo "board: $OUT/leaderboard/$set (board.md, board.json, bleu.png, length_ratio.png)"; done
