#!/usr/bin/env bash
# Prepare the synthetic language pair of the demo (relpos_recipes/tools/toy_corpus.py) the
# way prepare-wmt19-de-en.sh prepares WMT19: the same steps and output layout, so
# that build-test-sets.sh, train.sh and translate.sh work on it unchanged.
#
# Usage: scripts/prepare-toy.sh [options]
#
#   1. generate the corpora (small lexicon, deterministic from --seed): training pairs and a
#      dev set with --train-words source words, a test set with --test-words (longer);
#   2. no tokenization (the generated text is lowercase words and a full stop);
#   3. clean: drop empty lines and pairs whose length ratio exceeds --clean-ratio;
#   4. learn and apply joint BPE (subword-nmt, --bpe-merges merge operations);
#   5. build the two dictionaries (languages "src" and "tgt");
#   6. for each --max-len N: drop training pairs whose source OR target has more than N
#      subword tokens, then binarize into WORK/data-bin/lenN (see train.sh).
# build-test-sets.sh --work-dir WORK then builds "test" (the long test set) and "concat_seq"
# (its pairs 1+2, 3+4, ... joined).
#
# Options:
#   --work-dir DIR        output directory (default: work/toy in the checkout)
#   --seed N              seed of the sentences (default 1; dev and test use N+1000, N+2000)
#   --train-pairs N       training pairs generated, before the length filter (default 20000)
#   --train-words "A B"   training and dev sentences of A to B source words (default "12 40")
#   --dev-pairs N         (default 300)
#   --test-pairs N        (default 300)
#   --test-words "A B"    test sentences of A to B source words (default "12 50")
#   --max-len LIST        comma-separated length limits in subword tokens (default 50)
#   --bpe-merges N        joint BPE merge operations (default 400)
#   --bpe-vocab-threshold N  subword-nmt --vocabulary-threshold when applying (default 50)
#   --clean-ratio R       maximum length ratio of a pair (default 9)
#   --shards N            training shards = dev evaluations per epoch (default 1)
#   --dev-within-limit    keep only the dev pairs within each --max-len in data-bin/lenN (the dev
#                         loss then measures what training can learn; the demo's setting)
#   --train-band LO:HI[,...]  also keep the training and dev pairs whose length is LO to HI
#                         subword tokens in WORK/data-bin/bandLO-HI (repeatable; see
#                         prepare-corpus.sh)
#   --band-side SIDE      what a band measures: longer (default), source or target
#   --concat-augment      also WORK/data-bin/lenN-concat: the training pairs and pairs of them
#                         joined within the limit, from --seed (docs/reproducing.md)
#   --concat-share S      the share of the training pairs offered a partner (default 1)
#   --threads N           parallel workers (default: all cores)
#   --dry-run             list every step with its command and whether it is done
#   -h, --help            this help
#
# Re-running skips completed steps (manifests in WORK/.steps; a step whose outputs were
# deleted is redone, and the steps after it when it came out different).  Settings that change the data are recorded
# in the manifests and cannot change in an existing WORK.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe prepare-toy "$@"
