#!/usr/bin/env bash
# Train one system with the study's optimisation (Rosendahl et al. 2019 §4.1).
#
# Usage: scripts/train.sh --data DATA --arch ARCH --save-dir DIR [options] [fairseq-train args]
#
#   DATA   a directory from prepare-wmt19-*.sh (WORK/data-bin/lenN, holding shard0..shardS-1)
#          or any fairseq data-bin directory
#   ARCH   a fairseq-relpos architecture (docs/positions.md): the study's transformer_abs,
#          transformer_rel, transformer_rel_k, transformer_rel_v, transformer_rel_sin,
#          transformer_rel_abs, transformer_lstm_pos, transformer_nope,
#          transformer_abs_learned; transformer_t5, transformer_alibi, transformer_rope,
#          transformer_xl, transformer_rel_scalar, transformer_abs_scalar,
#          transformer_huang1..4, transformer_shape; relpos_transformer with
#          --encoder-pos/--decoder-pos SPEC; or a stock fairseq architecture such as transformer
#
# What it runs (fairseq-train; every value below can be changed by an option or by passing
# the fairseq argument itself, which comes last and wins):
#   Adam (betas 0.9/0.999), lr 3e-4, no warm-up (with the plateau schedule; others keep
#     fairseq's warm-up default); label-smoothed cross-entropy (0.1)
#   batches of --batch-tokens 4700 tokens per update: fairseq's --max-tokens per GPU is
#     ceil(4700 / (GPUs x --update-freq)), so the batch stays 4700 tokens on any GPU count
#   8 checkpoints and dev evaluations per epoch: the prepared data has 8 training shards and
#     fairseq runs one shard per (fairseq) epoch, evaluating and saving after each
#   lr x 0.9 when dev perplexity has not improved for 6 evaluations (reduce_lr_on_plateau,
#     --lr-shrink 0.9 --lr-patience 6, on --best-checkpoint-metric ppl)
#   stopping rule (the study does not state one): stop when dev perplexity has not improved
#     for --patience 24 evaluations (3 epochs; the lr has been cut at least 3 times by then)
#     or after --max-epochs 20 epochs of the training data, whichever comes first;
#     checkpoint_best.pt (lowest dev perplexity) is the model to translate with
#   fp16 mixed precision on GPUs (fairseq's FP16Optimizer with dynamic loss scaling); fp32
#     on CPU.  bf16 is not offered: fairseq 0.12.2 ties --bf16 to --tpu (XLA), so it does not
#     run on GPUs (facebookresearch/fairseq#4696)
#   all visible GPUs through fairseq's own distributed data parallel training; on a machine
#     without GPUs it trains on the CPU with OMP_NUM_THREADS=1 unless that is set
#
# Options:
#   --data DIR  --arch ARCH  --save-dir DIR   (required)
#   --user-dir DIR|none       plugin to load (default fairseq_relpos, which also leaves the
#                             stock fairseq architectures available; none: stock fairseq only)
#   --batch-tokens N          tokens per update (default 4700)
#   --update-freq N           accumulate N batches per update (default 1)
#   --gpus N                  GPUs to use (default: all visible; 0 = CPU)
#   --precision P             auto (fp16 on GPU, fp32 on CPU), fp16, amp (torch autocast)
#                             or fp32
#   --lr X                    (default 3e-4)
#   --lr-scheduler NAME       reduce_lr_on_plateau (the study's, default) or any fairseq
#                             scheduler, e.g. inverse_sqrt (the plateau options then do not apply)
#   --lr-shrink X             (default 0.9)
#   --lr-patience N           (default 6)
#   --patience N              stopping rule, dev evaluations without improvement (default 24)
#   --max-epochs N            epochs of the training data (default 20)
#   --seed N                  (default 1)
#   --keep-epoch-checkpoints N  also keep the last N per-evaluation checkpoints (default 0)
#   --dry-run                 print the fairseq-train command and exit
#   -h, --help                this help
# Re-running resumes from SAVE_DIR/checkpoint_last.pt (an empty or truncated one is refused,
# by name); once training has finished (SAVE_DIR/train.done) it does nothing if the settings
# are the same and refuses otherwise.  Delete train.done to train on (e.g. with a larger
# --max-epochs).  A SAVE_DIR holding a model of another --arch or --data is refused.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/pipeline.sh"

DATA="" ARCH="" SAVE="" USER_DIR=fairseq_relpos BATCH_TOKENS=4700 UPDATE_FREQ=1 GPUS="" PRECISION=auto
LR=3e-4 SCHEDULER=reduce_lr_on_plateau LR_SHRINK=0.9 LR_PATIENCE=6 PATIENCE=24 MAX_EPOCHS=20 SEED=1 KEEP=0 DRY_RUN=0
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) pl_help "$0"; exit 0 ;;
    --data) DATA=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --save-dir) SAVE=$2; shift 2 ;;
    --user-dir) USER_DIR=$2; shift 2 ;;
    --batch-tokens) BATCH_TOKENS=$2; shift 2 ;;
    --update-freq) UPDATE_FREQ=$2; shift 2 ;;
    --gpus) GPUS=$2; shift 2 ;;
    --precision) PRECISION=$2; shift 2 ;;
    --lr) LR=$2; shift 2 ;;
    --lr-scheduler) SCHEDULER=$2; shift 2 ;;
    --lr-shrink) LR_SHRINK=$2; shift 2 ;;
    --lr-patience) LR_PATIENCE=$2; shift 2 ;;
    --patience) PATIENCE=$2; shift 2 ;;
    --max-epochs) MAX_EPOCHS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --keep-epoch-checkpoints) KEEP=$2; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    --) shift; EXTRA+=("$@"); break ;;
    *) EXTRA+=("$1"); shift ;;  # anything else goes to fairseq-train
  esac
done
[[ -n "$DATA" && -n "$ARCH" && -n "$SAVE" ]] || pl_die "--data, --arch and --save-dir are required (see --help)"
[[ -d "$DATA" ]] && DATA="$(cd "$DATA" && pwd)"  # recorded in SAVE/train.env
case "$PRECISION" in
  auto|fp32|fp16|amp) ;;
  bf16) pl_die "--precision bf16: fairseq 0.12.2 turns --bf16 into --tpu (XLA) and cannot train in bf16 on GPUs (facebookresearch/fairseq#4696); use fp16 or amp" ;;
  *) pl_die "--precision: auto, fp16, amp or fp32" ;;
esac
for n in "$BATCH_TOKENS" "$UPDATE_FREQ" "$MAX_EPOCHS"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || pl_die "expected a positive integer, got '$n'"
done
[[ -z "$GPUS" || "$GPUS" =~ ^[0-9]+$ ]] ||
  pl_die "--gpus: expected the number of GPUs to use (0 for the CPU), got '$GPUS'"
# inverse_sqrt divides by the warm-up: it needs one (fairseq's default is 4000 updates)
for ((k = 0; k < ${#EXTRA[@]}; k++)); do
  if [[ "$SCHEDULER" == inverse_sqrt && ( "${EXTRA[k]}" == --warmup-updates=0 ||
        ( "${EXTRA[k]}" == --warmup-updates && "${EXTRA[k + 1]:-}" == 0 ) ) ]]; then
    pl_die "--lr-scheduler inverse_sqrt needs --warmup-updates of at least 1"
  fi
done

# What makes the model in SAVE: a finished folder is reused only for the same settings, and
# a folder holding another architecture or data is never trained on.
SETTINGS=$(printf '%q ' --arch "$ARCH" --data "$DATA" --user-dir "$USER_DIR" \
  --batch-tokens "$BATCH_TOKENS" --update-freq "$UPDATE_FREQ" --precision "$PRECISION" \
  --lr "$LR" --lr-scheduler "$SCHEDULER" --lr-shrink "$LR_SHRINK" --lr-patience "$LR_PATIENCE" \
  --patience "$PATIENCE" --max-epochs "$MAX_EPOCHS" --seed "$SEED" \
  --keep-epoch-checkpoints "$KEEP" "${EXTRA[@]}")
if [[ "$DRY_RUN" != 1 && -f "$SAVE/train.env" ]]; then
  for key in ARCH DATA; do
    was=$(pl_conf "$SAVE/train.env" "$key")
    [[ "$was" == "${!key}" ]] || pl_die "$SAVE holds a model with ${key}=$was, not ${!key}: use another --save-dir"
  done
  if [[ -f "$SAVE/train.done" && -f "$SAVE/checkpoint_best.pt" ]]; then
    if [[ "$(pl_conf "$SAVE/train.env" SETTINGS)" != "$SETTINGS" ]]; then
      pl_die "$SAVE was trained with other settings (train.env: $(pl_conf "$SAVE/train.env" SETTINGS)); use another --save-dir, or delete $SAVE/train.done to train on with these"
    fi
    pl_log "$SAVE: already trained (delete $SAVE/train.done to train on)"
    exit 0
  fi
fi
if [[ "$DRY_RUN" != 1 && -e "$SAVE/checkpoint_last.pt" ]]; then
  pl_check_checkpoint "$SAVE/checkpoint_last.pt"  # fairseq resumes from it
fi
[[ "$DRY_RUN" == 1 ]] || pl_enter_env

# Data: the shards of a prepared directory, joined for fairseq (one shard per fairseq epoch).
SHARDS=1
DATA_PATH="$DATA"
if [[ -d "$DATA/shard0" ]]; then
  SHARDS=0
  while [[ -d "$DATA/shard$SHARDS" ]]; do SHARDS=$((SHARDS + 1)); done
  DATA_PATH="$DATA/shard0"
  for ((k = 1; k < SHARDS; k++)); do DATA_PATH+=":$DATA/shard$k"; done
elif [[ "$DRY_RUN" != 1 ]] && ! compgen -G "$DATA/dict.*.txt" > /dev/null; then
  pl_die "$DATA: no fairseq data (expected shard0/ from prepare-wmt19-*.sh, or dict.*.txt)"
fi

# Devices: ask torch only where nvidia-smi lists a GPU (no Python start-up on CPU machines).
NGPU=0
if [[ "$DRY_RUN" == 1 ]]; then
  NGPU=${GPUS:-1}
else
  NGPU=$(pl_gpu_count)
fi
if [[ -n "$GPUS" && "$DRY_RUN" != 1 ]]; then
  (( GPUS <= NGPU )) || pl_die "--gpus $GPUS but only $NGPU GPU(s) visible"
  NGPU=$GPUS
fi
DEVICE_ARGS=()
if (( NGPU == 0 )); then
  DEVICE_ARGS=(--cpu)
  # one intra-op thread unless told otherwise: oversubscribed OpenMP threads on a busy CPU
  # make small models orders of magnitude slower
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
  [[ "$PRECISION" == auto ]] && PRECISION=fp32
else
  DEVICE_ARGS=(--distributed-world-size "$NGPU")
  [[ "$PRECISION" == auto ]] && PRECISION=fp16
fi
case "$PRECISION" in fp16) DEVICE_ARGS+=(--fp16) ;; amp) DEVICE_ARGS+=(--amp) ;; esac

[[ "$USER_DIR" == none ]] && USER_DIR=""

# 4700 tokens per update whatever the number of GPUs and accumulation steps.
NGPU_DIV=$(( (NGPU > 0 ? NGPU : 1) * UPDATE_FREQ ))
PER_GPU=$(( (BATCH_TOKENS + NGPU_DIV - 1) / NGPU_DIV ))

SCHEDULER_ARGS=(--lr-scheduler "$SCHEDULER")
if [[ "$SCHEDULER" == reduce_lr_on_plateau ]]; then
  SCHEDULER_ARGS+=(--lr-shrink "$LR_SHRINK" --lr-patience "$LR_PATIENCE" --warmup-updates 0)
fi

CKPT_ARGS=(--no-epoch-checkpoints)
(( KEEP > 0 )) && CKPT_ARGS=(--keep-last-epochs "$KEEP")

CMD=(fairseq-train "$DATA_PATH"
  ${USER_DIR:+--user-dir "$USER_DIR"}
  --arch "$ARCH" --task translation
  --optimizer adam --adam-betas "(0.9, 0.999)" --lr "$LR"
  "${SCHEDULER_ARGS[@]}"
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1
  --max-tokens "$PER_GPU" --update-freq "$UPDATE_FREQ"
  --best-checkpoint-metric ppl --patience "$PATIENCE" --max-epoch $((MAX_EPOCHS * SHARDS))
  --save-dir "$SAVE" --save-interval 1 --validate-interval 1 "${CKPT_ARGS[@]}"
  --skip-invalid-size-inputs-valid-test
  --seed "$SEED" --log-format simple --log-interval 100
  "${DEVICE_ARGS[@]}" "${EXTRA[@]}")

if [[ "$DRY_RUN" == 1 ]]; then
  printf '%q ' "${CMD[@]}"; printf '\n'
  exit 0
fi

mkdir -p "$SAVE"
{ printf 'ARCH=%s\nUSER_DIR=%s\nDATA=%s\nSHARDS=%s\nGPUS=%s\nPRECISION=%s\nMAX_TOKENS_PER_GPU=%s\nSETTINGS=%s\n' \
    "$ARCH" "$USER_DIR" "$DATA" "$SHARDS" "$NGPU" "$PRECISION" "$PER_GPU" "$SETTINGS"
  printf 'COMMAND='; printf '%q ' "${CMD[@]}"; printf '\n'; } > "$SAVE/train.env"
pl_log "training $ARCH on $DATA ($SHARDS shard(s), $NGPU GPU(s), $PRECISION, $PER_GPU tokens/GPU x $UPDATE_FREQ) -> $SAVE"
"${CMD[@]}" 2>&1 | tee -a "$SAVE/train.log"
[[ -f "$SAVE/checkpoint_best.pt" ]] || pl_die "training ended without $SAVE/checkpoint_best.pt (see $SAVE/train.log)"
date -u +%FT%TZ > "$SAVE/train.done"
