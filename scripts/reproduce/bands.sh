#!/usr/bin/env bash
# Length as a domain (Variš and Bojar 2021): train each scheme on one band of sentence lengths
# at a time, test every system on every band.  Quality that peaks on the trained band and
# falls on both sides, shorter as well as longer, is length-based overfitting; whether a
# position scheme removes it is what the band matrix of each scheme shows.
#
# Usage: scripts/reproduce/bands.sh [options]                  (the synthetic pair, on a CPU)
#        scripts/reproduce/bands.sh --data tatoeba --from deu.txt [options]
#        scripts/reproduce/bands.sh --data DIR --bands 1:10,11:20,21:30 [options]
#
# Steps:
#   1. the data, with a training set per band: the pairs whose length is in the band (and the
#      dev pairs in it, on which each system's best checkpoint is chosen), in
#      DATA/data-bin/bandLO-HI, as prepare-*.sh --train-band makes it:
#      - synthetic (default): the demo's generated pair (prepare-toy.sh) with sentences of 3
#        source words up to what the highest test band needs, in OUT/data;
#      - tatoeba: prepare-tatoeba.sh's split of --from FILE (or --download), in OUT/data;
#      - DIR: a folder prepared beforehand (prepare-corpus.sh, or any prepare-*.sh with its
#        test sets built); the bands' data are added to it;
#   2. per scheme and band: train.sh on the band (the corpus's model: the demo's 2+2 layers
#      of width 64 on the synthetic pair, tatoeba.sh's 3+3 of width 256 otherwise; --updates
#      updates), then translate.sh on the test set, which spans every band;
#   3. the band matrix (python -m relpos_analysis.bands): per scheme, BLEU and the failure
#      columns (empty, short, loop, log2 p/token) of every train band on every test band, with
#      95% bootstrap intervals and paired tests against the diagonal (the system trained on
#      the column's band), as OUT/matrix/bands.md/.json/.csv/.tex and heatmap.png/.pdf (BLEU,
#      a panel per scheme, the diagonal outlined).
# A band's length is its longer side in subword tokens (--band-side source or target: that
# side's), the length the reports bucket by.
#   OUT/SCHEME/bandLO-HI/          each system: checkpoints, train.log, TESTSET/hyp.txt
#   OUT/matrix/                    the band matrix
#
# Options:
#   --data WHAT          synthetic (default), tatoeba, or a prepared folder DIR
#   --from FILE          (tatoeba) deu.txt or deu-eng.zip; --download fetches it instead
#   --systems LIST       comma-separated architectures (default transformer_abs,transformer_rel)
#   --bands LIST         the bands to train on, LO:HI,... (both ends included, not overlapping;
#                        default: synthetic 1:15,16:30,31:45; tatoeba 1:8,9:16; required with DIR)
#   --test-bands LIST    the bands to test on (default: synthetic 1:15,16:30,31:45,46:60,
#                        tatoeba 1:8,9:16,17:24,25:32; otherwise --bands)
#   --band-side SIDE     longer (default), source or target
#   --test-set NAME      the test set (default: test; with DIR its first test set)
#   --updates N          training updates per system (default: synthetic 2300, otherwise 2500)
#   --quick              a small, fast run for the tests (two bands, few sentences, at most
#                        200 updates, 100 resamples); its numbers show nothing
#   --seed N             seed of the synthetic corpus, of training and of the resampling
#                        (default 1)
#   --out-dir DIR        where everything goes (default runs/bands, runs/bands-tatoeba,
#                        runs/bands-NAME for --data NAME)
#   --threads N          systems trained at a time, one core each (default: all cores)
#   --gpus N             train and translate on N GPUs instead (fp16)
#   --dry-run            list every step with its command and whether it is done; run nothing
#   @launcher-options (scripts/lib/launcher-options.txt)
#   -h, --help           this help
# Environment: SMOKE=1 with --data tatoeba runs every step on every 85th pair of SMOKE_DATA
# with tiny models, as reproduce/tatoeba.sh does.
# Re-running resumes: finished steps are skipped, training resumes from its last checkpoint.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/recipe.sh"
relpos_recipe bands "$@"
