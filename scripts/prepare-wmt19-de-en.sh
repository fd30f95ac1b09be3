#!/usr/bin/env bash
# Prepare the study's WMT19 German->English training data (Rosendahl et al. 2019).
#
# Usage: scripts/prepare-wmt19-de-en.sh [options]
#
#   1. fetch CommonCrawl, Europarl v9, News Commentary v14, Rapid 2019 and the WMT19
#      dev/test sets (newstest2015 = dev, newstest2018 = test) from their official WMT19
#      locations, or take them from --local-dir directories (archives as distributed, or
#      plain text: commoncrawl.de-en.de/.en, europarl-v9.de-en.de/.en,
#      news-commentary-v14.de-en.de/.en, rapid2019.de-en.de/.en, newstestYYYY.de/.en);
#   2. normalise punctuation and tokenize (sacremoses; -a aggressive hyphen splitting);
#   3. clean: drop empty lines and pairs whose length ratio exceeds --clean-ratio;
#   4. learn and apply joint BPE (subword-nmt, --bpe-merges merge operations);
#   5. build the two dictionaries (separate, from the cleaned training data);
#   6. for each --max-len N: drop training pairs whose source OR target has more than N
#      subword tokens (prints how many were kept and removed), then binarize (the files
#      fairseq-preprocess writes) into WORK/data-bin/lenN/shard0..shardS-1 (see train.sh).
#
# Options:
#   --work-dir DIR        output directory (default: work/wmt19-de-en in the checkout)
#   --local-dir DIR       look here for the corpora and test sets first (repeatable)
#   --offline             never download; a missing corpus is an error naming what is missing
#   --max-len LIST        comma-separated length limits (default 100; the study's second
#                         setting is 75: --max-len 100,75)
#   --bpe-merges N        joint BPE merge operations (default 50000)
#   --bpe-vocab-threshold N  subword-nmt --vocabulary-threshold when applying (default 50)
#   --corpora LIST        subset of commoncrawl,europarl,news-commentary,rapid (default all)
#   --clean-ratio R       maximum length ratio of a pair (default 9, Moses' clean-corpus-n)
#   --shards N            training shards = checkpoints and dev evaluations per epoch (default 8)
#   --threads N           parallel workers (default: all cores)
#   --dry-run             list every step with its command and whether it is done
#   -h, --help            this help
#
# Re-running skips completed steps (manifests in WORK/.steps; a step whose outputs were
# deleted is redone, and the steps after it when it came out different); a new --max-len only adds its own filter and
# binarization.  Settings that change the data (corpora, BPE, cleaning, shards)
# are recorded in the manifests and cannot change in an existing WORK.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe prepare-wmt19-de-en "$@"
