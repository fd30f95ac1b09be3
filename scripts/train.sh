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
#   --precision P             auto (fp16 on GPU, fp32 on CPU), fp16 (GPUs only), amp
#                             (torch autocast) or fp32
#   --lr X                    (default 3e-4)
#   --lr-scheduler NAME       reduce_lr_on_plateau (the study's, default) or any fairseq
#                             scheduler, e.g. inverse_sqrt (the plateau options then do not apply)
#   --lr-shrink X             (default 0.9)
#   --lr-patience N           (default 6)
#   --patience N              stopping rule, dev evaluations without improvement (default 24)
#   --max-epochs N            epochs of the training data (default 20)
#   --seed N                  (default 1)
#   --keep-epoch-checkpoints N  also keep the last N per-evaluation checkpoints (default 0)
#   --resume-with-changes     go on from SAVE_DIR/checkpoint_last.pt although it was trained
#                             with other settings (a larger --max-update or --max-epochs,
#                             another --lr); its architecture, positions and data must match
#   --dry-run                 print the fairseq-train command and exit
#   -h, --help                this help
# Re-running resumes from SAVE_DIR/checkpoint_last.pt (an empty or truncated one is refused,
# by name); a training that reached --max-update is finished, not trained one update more.
# Every checkpoint it hands on (checkpoint_best.pt, checkpoint_last.pt) must record this
# command's architecture, position specs and data (another system's is refused, by name), and
# a finished training whose checkpoint_best.pt is gone is refused, never given checkpoint_last.pt.
# Once training has finished (SAVE_DIR/.steps/train.json, its manifest) it does nothing if the
# settings are the same.  A SAVE_DIR holding a checkpoint trained with other settings (another
# --max-update, --lr, ...) is refused, naming what differs; --resume-with-changes goes on from
# its checkpoint_last.pt with the new settings.  fairseq's output goes to SAVE_DIR/train.log.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe train "$@"
