# shellcheck shell=bash
# The demo's steps, shared by demo.sh and leaderboard.sh (sourced after pipeline.sh, never run):
# one synthetic corpus in OUT/data, each system trained and translated in its own folder.
#
#   demo_cli "$@"             the options both scripts have; others are left in DEMO_REST
#   demo_refuse_unless_ours   a folder in the way that the demo did not make stops the run
#   demo_prepare              the environment, the architectures, the data and test sets
#   demo_system ARCH SEED DIR one system: trained with training seed SEED, both sets translated
#   demo_edges SET            the reports' length buckets
#
# Every folder the demo makes carries a marker (demo.settings, or demo.command in a report
# folder) that lets a re-run replace it; it deletes nothing else.

DEMO_TEST_SETS=(test concat_seq)
DEMO_MODEL=(--encoder-layers 2 --decoder-layers 2 --encoder-embed-dim 64 --decoder-embed-dim 64
  --encoder-ffn-embed-dim 128 --decoder-ffn-embed-dim 128
  --encoder-attention-heads 4 --decoder-attention-heads 4 --dropout 0.1)

# demo_cli ARGS...: SYSTEMS LIMIT UPDATES SEED OUT QUICK GPUS from the common options (defaults:
# the caller's, if set), the options it does not know in DEMO_REST; then the derived
# settings: ARCHS, UPDATES (capped by --quick), DATA_ARGS and DATA_SETTINGS.
demo_cli() {
  SYSTEMS=${SYSTEMS:-transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos}
  LIMIT=50 UPDATES=3000 SEED=1 OUT="$PL_REPO/runs/demo" QUICK=0 GPUS=0 DEMO_REST=()
  while [[ $# -gt 0 ]]; do
    case "$1" in
      -h|--help) pl_help "$0"; exit 0 ;;
      --systems) SYSTEMS=$2; shift 2 ;;
      --train-limit) LIMIT=$2; shift 2 ;;
      --updates) UPDATES=$2; shift 2 ;;
      --quick) QUICK=1; shift ;;
      --seed) SEED=$2; shift 2 ;;
      --out-dir) OUT=$2; shift 2 ;;
      --threads) THREADS=$2; shift 2 ;;
      --gpus) GPUS=$2; shift 2 ;;
      *) DEMO_REST+=("$1"); shift ;;
    esac
  done
  [[ "$LIMIT" =~ ^[1-9][0-9]*$ && "$LIMIT" -ge 16 ]] || pl_die "--train-limit: expected an integer of at least 16, got '$LIMIT'"
  [[ "$UPDATES" =~ ^[1-9][0-9]*$ ]] || pl_die "--updates: expected a positive integer, got '$UPDATES'"
  [[ "$SEED" =~ ^[0-9]+$ ]] || pl_die "--seed: expected a non-negative integer, got '$SEED'"
  [[ "$GPUS" =~ ^[0-9]+$ ]] || pl_die "--gpus: expected the number of GPUs to use (0 for CPU cores only), got '$GPUS'"
  pl_systems_list "$SYSTEMS"
  local train_pairs=20000 test_pairs=300
  if [[ "$QUICK" == 1 ]]; then
    train_pairs=4000 test_pairs=60 UPDATES=$(( UPDATES < 200 ? UPDATES : 200 ))
  fi
  # Sentence lengths in source words, scaled with the limit (50: training 12-40, test 12-50).
  # A target has about 1.4 words per source word and BPE splits few words, so training
  # sentences straddle the limit and the test set's longer sides reach about twice it.
  local shortest=$((LIMIT / 4))
  DATA_ARGS=(--seed "$SEED" --max-len "$LIMIT"
    --train-pairs "$train_pairs" --train-words "$shortest $((LIMIT * 4 / 5))"
    --test-pairs "$test_pairs" --test-words "$shortest $LIMIT")
  DATA_SETTINGS="${DATA_ARGS[*]}"
}

# demo_refuse_unless_ours DIR MARKER: die if DIR is in the way and was not made by the demo.
demo_refuse_unless_ours() {
  if [[ -d "$1" && ! -f "$1/$2" && -n "$(ls -A "$1")" ]]; then
    pl_die "$1 exists and was not made by demo.sh or leaderboard.sh (no $2 in it); choose another --out-dir or move it away"
  fi
}

# demo_fresh_unless_same DIR SETTINGS: a folder whose recorded settings differ is started afresh.
demo_fresh_unless_same() {
  if [[ "$(cat "$1/demo.settings" 2>/dev/null)" != "$2" ]]; then
    rm -rf "$1" && mkdir -p "$1" && echo "$2" > "$1/demo.settings"
  fi
}

# demo_phase_took WHAT: how long the phase that ends now took.
demo_phase_took() {
  pl_log "$1 took $((SECONDS - ${DEMO_PHASE_START:-0})) s"
  DEMO_PHASE_START=$SECONDS
}

# demo_edges SET: the report's bucket edges, at multiples of the limit: up to 2x in halves
# for the test set, up to 3x for concat_seq, whose joined pairs are twice as long.
demo_edges() {
  case "$1" in
    test) echo "$LIMIT,$((LIMIT * 3 / 2)),$((LIMIT * 2))" ;;
    concat_seq) echo "$LIMIT,$((LIMIT * 2)),$((LIMIT * 3))" ;;
  esac
}

# demo_prepare: the environment, ARCHS checked against fairseq's registry, --gpus against the
# GPUs torch sees, OUT made absolute, and the data with its test sets in DATA=OUT/data.
demo_prepare() {
  local visible
  pl_enter_env
  pl_check_archs --systems "${ARCHS[@]}"
  if (( GPUS > 0 )); then
    visible=$(pl_gpu_count)
    (( GPUS <= visible )) || pl_die "--gpus $GPUS but torch sees $visible GPU(s)"
  fi
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  DATA="$OUT/data"
  DEMO_PHASE_START=$SECONDS
  demo_fresh_unless_same "$DATA" "$DATA_SETTINGS"
  touch "$DATA/.lock"  # the preparation's folder, beside the demo's own files
  bash "$PL_SCRIPTS/prepare-toy.sh" --work-dir "$DATA" "${DATA_ARGS[@]}" --threads "$THREADS" > "$DATA/prepare.log" 2>&1 ||
    { tail -n 20 "$DATA/prepare.log" >&2; pl_die "preparing the data failed (see $DATA/prepare.log)"; }
  grep -h "length filter" "$DATA/len$LIMIT/filter.txt" >&2
  bash "$PL_SCRIPTS/build-test-sets.sh" --work-dir "$DATA" --threads "$THREADS" >&2
  demo_phase_took "preparing the data and the test sets"
}

# demo_system ARCH TRAIN_SEED DIR: train ARCH into DIR (2+2 layers of width 64, UPDATES updates
# of 2,000 tokens, Adam with lr 3e-3 on an inverse-sqrt schedule, on one CPU core), then
# translate both test sets into DIR/SET.  The demo's own systems use the corpus seed as the
# training seed, so their folders (and settings) are the demo's.  With --gpus N, training
# (fp16, train.sh's default on a GPU) and translation run on GPU number PL_UNIT_INDEX mod N:
# these models are small enough for several to share one GPU.  A GPU model's settings differ
# from a CPU model's, so neither is ever taken for the other.
demo_system() {
  local arch=$1 train_seed=$2 dir=$3 set settings="$DATA_SETTINGS --updates $UPDATES"
  local train_device=(--gpus 0) translate_device=(--cpu) gpu_ids
  [[ "$train_seed" == "$SEED" ]] || settings+=" --train-seed $train_seed"
  if (( GPUS > 0 )); then
    IFS=, read -r -a gpu_ids <<< "${CUDA_VISIBLE_DEVICES:-$(seq -s, 0 $((GPUS - 1)))}"
    export CUDA_VISIBLE_DEVICES=${gpu_ids[${PL_UNIT_INDEX:-0} % GPUS]}
    train_device=(--gpus 1) translate_device=() settings+=" --device gpu"
  fi
  demo_fresh_unless_same "$dir" "$settings"
  bash "$PL_SCRIPTS/train.sh" --data "$DATA/data-bin/len$LIMIT" --arch "$arch" \
    --save-dir "$dir" "${train_device[@]}" --batch-tokens 2000 --lr 3e-3 --lr-scheduler inverse_sqrt \
    --seed "$train_seed" "${DEMO_MODEL[@]}" --warmup-updates 100 \
    --max-update "$UPDATES" --max-epochs 1000 --patience -1 --log-interval 100 --num-workers 0
  for set in "${DEMO_TEST_SETS[@]}"; do
    bash "$PL_SCRIPTS/translate.sh" --checkpoint "$dir/checkpoint_best.pt" \
      --testset "$DATA/testsets/$set" --out-dir "$dir/$set" "${translate_device[@]}"
  done
}
