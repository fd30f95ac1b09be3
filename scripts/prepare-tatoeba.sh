#!/usr/bin/env bash
# Prepare the Tatoeba German->English pairs (manythings.org/anki's deu-eng export) for the
# length study: train on the short sentences, test on the long ones and on joined pairs.
#
# Usage: scripts/prepare-tatoeba.sh --from FILE --out-dir DIR [options]
#        scripts/prepare-tatoeba.sh --download --out-dir DIR [options]
#
#   FILE   deu.txt (a pair per line: English<TAB>German; newer exports add a third,
#          attribution column, which is ignored) or the deu-eng.zip holding it.  --download
#          fetches the current export from https://www.manythings.org/anki/deu-eng.zip to
#          DIR/raw/deu-eng.zip first (its sha256 is printed and kept in DIR/split/SOURCE).
#
# Steps (the same as prepare-wmt19-de-en.sh from step 2 on):
#   1. check every line of FILE (a line without a tab, an empty side or bytes that are not
#      UTF-8 stop the script with the file, the line number and what was expected, before
#      anything is written), then split it (relpos_recipes/tools/tatoeba.py) into raw text
#      DIR/split/{train,dev,test}.{de,en}, with the counts in DIR/split/counts.json:
#      - by sentence group: pairs sharing an English or a German sentence stay together, so
#        no sentence (nor any of its translations) is on two sides;
#      - test = every group with a side of more than --max-len Moses tokens (the training
#        filter drops them anyway, since subwords only split tokens further), plus a random
#        sample of --test-short-pairs pairs of the other groups, shuffled; dev = another
#        random sample of --dev-pairs; train = the rest.  Reproducible from --seed.
#   2. Moses punctuation normalization and tokenization (sacremoses, -a);
#   3. clean: drop pairs whose length ratio exceeds --clean-ratio;
#   4. joint BPE (subword-nmt, --bpe-merges merges, learned on the training side);
#   5. dictionaries, the training length filter (a pair is dropped when its source OR
#      target has more than --max-len subword tokens) and binarization to
#      DIR/data-bin/lenN for train.sh;
#   6. test sets (build-test-sets.sh): test, concat_seq (its pairs joined two by two) and
#      concat3_seq (three by three), each in DIR/testsets/NAME for translate.sh.
# Every step prints and records its counts (DIR/split/counts.json, DIR/text/clean.txt,
# DIR/lenN/filter.txt).
#
# Options:
#   --from FILE              the export (deu.txt or deu-eng.zip)
#   --download               fetch the current export instead (needs the internet)
#   --out-dir DIR            output directory (default work/tatoeba-de-en in the checkout)
#   --seed N                 seed of the split (default 1)
#   --max-len N              training length limit in subword tokens (default 16: 3,690
#                            pairs of the 2018 export, 2.2%, are beyond it in Moses tokens)
#   --dev-pairs N            (default 1000)
#   --test-short-pairs N     short pairs in the test set (default 2000)
#   --bpe-merges N           joint BPE merge operations (default 10000)
#   --clean-ratio R          maximum length ratio of a training pair (default 9)
#   --train-band LO:HI[,...] also keep the training and dev pairs whose length is LO to HI
#                            subword tokens in DIR/data-bin/bandLO-HI (see prepare-corpus.sh)
#   --band-side SIDE         what a band measures: longer (default), source or target
#   --concat-augment         also DIR/data-bin/lenN-concat: the training pairs and pairs of
#                            them joined within the limit, from --seed (docs/reproducing.md)
#   --concat-share S         the share of the training pairs offered a partner (default 1)
#   --threads N              parallel workers (default: all cores)
#   --dry-run                list every step with its command and whether it is done
#   -h, --help               this help
# Re-running skips completed steps; the settings that define the data (the file's content
# by sha256, seed, sizes, limit, merges) are recorded in the steps' manifests (DIR/.steps/)
# and cannot change in an existing DIR.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe prepare-tatoeba "$@"
