#!/usr/bin/env bash
# The study in miniature, on a CPU: do relative positions translate sentences longer than
# any seen in training, where absolute positions fail?
#
# Usage: bash scripts/demo.sh [options]
#
# The same scripts as the WMT recipes (scripts/reproduce/), on a synthetic language pair:
#   1. prepare-toy.sh: a generated corpus (relpos_recipes/tools/toy_corpus.py: SOV source,
#      SVO target with agreement, clauses chained to any length; 20,000 training sentences
#      of 12-40 words), joint BPE (subword-nmt), training pairs filtered to --train-limit
#      subword tokens on both sides, binarized (fairseq-preprocess's format)
#   2. build-test-sets.sh: the test set (300 sentences of 12-50 words, reaching about twice
#      the training limit in subword tokens) and its concat_seq (pairs 1+2, 3+4, ... joined)
#      (the word ranges scale with --train-limit; these are for 50)
#   3. train.sh: each system the same size (2+2 layers of width 64) and budget (--updates),
#      on CPU, as many at a time as there are cores (one core each); fairseq's progress
#      lines are shown prefixed with the system's name
#   4. translate.sh: both test sets (fairseq-generate, beam 5)
#   5. the length-bucket report (python -m relpos_analysis.report) for each test set: BLEU and TER
#      per length bucket with 95% confidence intervals and paired tests against the first
#      system.  A pair's length is the longer of its two sides in subword tokens: the filter
#      removed training pairs by either side, so that is what "beyond the training lengths"
#      means here.
# Each step is skipped when its manifest (FOLDER/.steps/) says it ran with the same command on
# the same inputs, so a re-run resumes; a step whose options changed is redone, replacing only
# its own files.  A folder in --out-dir that the demo did not make is refused, by name, before
# any work; a moved or copied --out-dir is still the same run.  It prints how long each phase
# took.
#
# Options:
#   --systems LIST       comma-separated architectures, the first is the baseline (default
#                        transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos)
#   --concat-systems LIST  architectures also trained on the concatenation-augmented data
#                        (data-bin/lenN-concat: training pairs joined two at a time within the
#                        limit, docs/reproducing.md), each a system of its own, ARCH+concat
#   --train-limit N      longest training pair, in subword tokens (default 50)
#   --updates N          training updates per system (default 2300)
#   --quick              a smaller, faster run (fewer sentences and updates) for CI; its
#                        numbers show nothing
#   --seed N             seed of the corpus and of training (default 1)
#   --out-dir DIR        where everything goes (default runs/demo in the checkout)
#   --threads N          systems trained at a time, one core each (default: all cores)
#   --gpus N             train and translate on N GPUs instead (fp16), --threads systems at a
#                        time shared out among them; a model trained on the other device is
#                        trained again (default 0: CPU only, the same translations on every run)
#   --oracle-length      also decode each system with each sentence's reference length (end of
#                        sentence forbidden before it, forced at it): the reports then set
#                        free against oracle-length BLEU per bucket (docs/analysis.md)
#   --dry-run            list every step with its command and whether it is done; run nothing
#   @launcher-options (scripts/lib/launcher-options.txt)
#   -h, --help           this help
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe demo "$@"
