#!/usr/bin/env bash
# SCAN's length generalization (Lake and Baroni 2018), as Csordas et al. (2021) and Newman et
# al. (2020) measure it: the standard length split and the length-cutoff resplits, exact match
# of each system with several seeds, decoded freely and at the oracle length.  Nothing is
# downloaded: SCAN is generated from its grammar (python -m relpos_recipes.tools.scan).
#
# Usage: scripts/reproduce/scan.sh --split length|cutoff:C [--cutoffs C1,C2,...] [options]
#                                                                  (SMOKE=1 for a tiny run)
#
# Steps, per split: the data (python -m relpos_recipes.tools.scan --split SPLIT --parallel:
# train on the pairs of at most C actions, the length split's 22, test on every longer one;
# a cutoff split's dev set is a tenth of its training pairs held out, the length split's a
# tenth of them kept in training), prepared as prepare-corpus.sh --segmentation none does
# (commands and actions are the tokens, word-level dictionaries); per system and seed
# train.sh, then translate.sh of the test set greedily (beam 1) and at the oracle length
# (each reference's number of actions, end of sentence forced there: Newman et al.'s -EOS);
# then relpos-leaderboard per split --metrics bleu,ter,exact --rank-by exact: exact match
# per bucket of the reference's number of actions, as mean ± sd over seeds, with the 95%
# interval of the difference to the first system (pooled seeds, paired bootstrap), free and
# oracle length side by side; last, the summary of every split.
#   OUT/SPLIT/data/                the generated split (scan/) and its prepared folder
#   OUT/SPLIT/models/ARCH-seedS/   checkpoints, train.log; last/test/ and last/test.oracle/ the
#                                  translations (with --checkpoint best: test/ and test.oracle/)
#   OUT/SPLIT/board/               board.md/json/csv/tex, bleu.png, oracle.png, ...
#   OUT/SPLIT/updates/             with --checkpoint-every: exact match against updates
#   OUT/summary/                   scan.json (systems, seeds, updates, checkpoint, exact match
#                                  per split, free and oracle, with the differences), scan.md,
#                                  exact.png (exact match against the cutoff, a line per system:
#                                  free solid, oracle length dashed; the length split as squares)
# Every model has Csordas et al.'s settings: 3+3 layers of width 128, 8 heads, FFN 256,
# dropout 0.5, batches of 256 sentences, Adam at a fixed learning rate of 1e-3, gradient norm
# clipped at 5, cross-entropy; the model at the end of the budget translates (Csordas et al.
# report theirs after 50,000 steps, with no choice by a dev set).  Without a GPU the models
# train side by side, one per core.
#
# Options:
#   --split S          length (Lake and Baroni: train on at most 22 actions) or cutoff:C
#   --cutoffs LIST     cutoff splits, comma-separated (the published curve: 22,24,25,26,27,28,
#                      30,32,33,36,40); with --split, both are run
#   --systems LIST     comma-separated architectures, the first is the baseline of the
#                      differences (default transformer_abs,transformer_xl,transformer_rel)
#   --seeds N          models per system and split, seeds SEED..SEED+N-1 (default 3)
#   --seed N           the first training seed (default 1)
#   --updates N        training updates of each model (default 50000, the published budget)
#   --quick            at most 200 updates
#   --bootstrap N      resamples of the boards' paired tests (default 1000)
#   --checkpoint-every K  also keep each model's checkpoint of every K updates and decode each,
#                      free and at the oracle length: OUT/SPLIT/updates/ has exact match against
#                      updates (updates.json, updates.md, updates.png; default 0: none)
#   --checkpoint last|best  the checkpoint of each training that translates for the boards:
#                      the last (default) or the one of the best dev perplexity (one evaluation
#                      per epoch); the other's translations, where made before, stay
#   --out-dir DIR      everything (default runs/scan; SMOKE=1: runs/smoke/scan)
#   --threads N        cores to use (default: all)
#   --gpus N           GPUs to use on this machine (default 0: CPU cores)
#   --dry-run          list every step with its command and whether it is done; run nothing
#   @launcher-options (scripts/lib/launcher-options.txt)
#   -h, --help         this help
# Environment: SMOKE=1 runs every step on every 40th pair of each part with 1+1-layer models,
# batches of 32 sentences and 20 updates (an explicit --updates is kept), in well under a
# minute per split.
# Re-running resumes: finished steps are skipped, training resumes from its last checkpoint.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe scan "$@"
