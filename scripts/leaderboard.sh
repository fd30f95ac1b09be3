#!/usr/bin/env bash
# The length-generalization leaderboard: every position scheme trained on the demo's
# synthetic pair (or Tatoeba German->English) with its own learning rate and several seeds,
# ranked by BLEU beyond the training lengths.
#
# Usage: bash scripts/leaderboard.sh [options]
#
# The protocol (Ruoss et al. 2023, Kazemnejad et al. 2023 select each scheme's learning rate
# on in-distribution validation data):
#   1. the data and test sets, in OUT/data (the demo's, with the dev pairs kept to those
#      within the training limit: the dev loss measures what training can learn);
#   2. every scheme trained at every rate of --lr-grid with the first seed, each until its dev
#      loss has not improved for --patience evaluations (one every --validate-every updates)
#      or for --updates updates, into OUT/leaderboard/models/ARCH-lrLR;
#   3. each scheme's rate chosen by the lowest dev loss, never by a test set
#      (OUT/leaderboard/choice/ARCH.json; the table of every rate in OUT/leaderboard/tuning.json);
#   4. the other seeds (--seed + 1, ...) trained at the chosen rate (ARCH-lrLR-seedS), and
#      every seed's model translates both test sets (beam 5);
#   5. python -m relpos_analysis.leaderboard per test set, into OUT/leaderboard/SET/: board.md
#      (printed), board.csv, board.json, board.tex, bleu.png and length_ratio.png: the
#      schemes ranked by BLEU beyond the limit, with the chosen rate, the updates it took,
#      BLEU within the limit, retention (beyond / within), the difference to the baseline
#      beyond the limit with its 95% bootstrap interval, the learning-rate table, and BLEU,
#      TER and the length ratio per bucket; a scheme below 95 BLEU within the limit on the
#      synthetic pair "did not learn" and is shown apart from the ranking.
# As many trainings at a time as there are cores, one core each (or --gpus).  A scheme that
# fails (a training that diverges at every rate, a model that refuses long inputs) does not
# stop the others and stays on the board with its error.  Re-running continues where a run
# stopped; a failed training is tried again.  The demo's own models (OUT/ARCH) are not used:
# they train for a fixed budget at one rate.
#
# Options:
#   --systems LIST     comma-separated architectures, the first is the baseline (default:
#                      every architecture of fairseq-relpos, transformer_abs first)
#   --concat-systems LIST  architectures also trained on the concatenation-augmented data
#                      (lenN-concat: pairs joined two at a time within the limit;
#                      docs/reproducing.md), each a scheme of its own named ARCH+concat, e.g.
#                      transformer_abs: the data-side remedy every scheme is compared with
#   --seeds N          training seeds per scheme (default 3)
#   --lr-grid LIST     learning rates to choose from, a factor of about 3 apart (default
#                      3e-3,1e-2,3e-2: from the demo's 3e-3 up, where the first CPU board's
#                      schemes did best; --data tatoeba: 3e-4,1e-3,3e-3; --quick: 3e-3)
#   --scheme-lr-grid ARCH=LIST  a scheme's own grid instead (repeatable): where its chosen
#                      rate sat at the edge of the common grid, the grid extended on that side
#   --validate-every N dev evaluations every N updates (default 200)
#   --patience N       stop after N evaluations without a lower dev loss (default 5)
#   --updates N        the cap on updates per training (default 6000)
#   --data synthetic|tatoeba  the demo's pair (default) or Tatoeba German->English, prepared
#                      from --from FILE (deu.txt or deu-eng.zip) or --download as
#                      prepare-tatoeba.sh does, with the Tatoeba model (3+3 layers of width
#                      256) and buckets at 1-4x its limit of 16 (default --out-dir:
#                      runs/leaderboard-tatoeba; SMOKE=1: every 85th pair, tiny models)
#   --data DIR         a folder prepared beforehand (scripts/prepare-corpus.sh): its data-bin
#                      at --train-limit (default: the one limit it was prepared at), its test
#                      sets, the Tatoeba model and grid, buckets at 1, 1.5, 2 and 3x the limit
#                      (the joined sets 1-4x); --concat-systems trains on its lenN-concat,
#                      which it adds (share 1, --seed) where it was not prepared with
#                      --concat-augment (default --out-dir: runs/leaderboard-NAME)
#   --train-limit N    longest training pair, in subword tokens (default 50)
#   --seed N           seed of the corpus and the first training seed (default 1)
#   --quick            the demo's --quick data and at most 200 updates (for CI; its numbers
#                      show nothing)
#   --out-dir DIR      the demo's folder (default runs/demo), whose data is reused
#   --threads N        systems trained at a time, one core each (default: all cores)
#   --gpus N           train and translate on N GPUs instead (fp16), --threads systems at a
#                      time shared out among them; a model trained on the other device is
#                      trained again (default 0: CPU only, the same translations on every run)
#   --dry-run          list every step with its command and whether it is done; run nothing
#   --oracle-length    also decode each model with each sentence's reference length: the
#                      boards then set free against oracle-length BLEU per bucket
#   @launcher-options (scripts/lib/launcher-options.txt)
#   -h, --help         this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe leaderboard "$@"
