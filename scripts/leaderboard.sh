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
# Re-running continues where a run stopped: finished models and translations are reused (an
# interrupted training resumes from its last checkpoint); a failed system is tried again.
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
#   --dry-run          list every step with its command and whether it is done; run nothing
#   --launcher local|slurm  run the steps on this machine (default) or submit them to SLURM:
#                      the data as one job, each system as one job (its training, then its
#                      translations), the reports after them; training jobs requeue themselves
#                      and resume from their last checkpoint (docs/reproducing.md, "Running on a
#                      cluster").  With slurm:
#   --slurm-partition P   --slurm-time T   --slurm-mem M   (sbatch's --partition --time --mem)
#   --slurm-gpus-per-job N  GPUs of each system's job (default 1; 0 for CPU-only clusters)
#   --slurm-nodes N    nodes of each system's job: one training task per GPU on all of them
#   --slurm-cpus-per-job N  (default: 4 per GPU; the data's job: --threads)
#   --slurm-args "..."  more sbatch options, as they are
#   --wait             wait for the last job and print the reports, as the local launcher does
#   -h, --help         this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe leaderboard "$@"
