#!/usr/bin/env bash
# Build the study's test sets, segmented like the training data and binarized for
# fairseq-generate.
#
# Usage: scripts/build-test-sets.sh --work-dir PREPARED [--sets LIST] [options]
#
# Sets (comma-separated):
#   newstest_all   De->En newstest2008-2018 without newstest2015 (the dev set), concatenated
#                  in year order: 28,075 pairs
#   concat_seq     newstest_all's pairs 1+2, 3+4, ... joined with a space (source with source,
#                  target with target); an odd last pair stays alone: 14,038 pairs.  Joined
#                  after segmentation, so a joined line's length is the sum of its parts'.
#                  (For the synthetic pair of prepare-toy.sh and for Tatoeba: their test
#                  set's pairs joined.)
#   concat3_seq    the same, three by three (1+2+3, 4+5+6, ...; Tatoeba's default)
#   newstestYYYY, newsdevYYYY   one WMT set as it is (e.g. newstest2018, newstest2019)
#   any other set whose text the preparation wrote to PREPARED/orig/NAME.{SRC,TGT}
#                  (prepare-toy.sh: valid, test)
# Default: newstest_all,concat_seq,newstest2018 for de-en; newstest2019 for zh-en;
# test,concat_seq for the synthetic pair; test,concat_seq,concat3_seq for Tatoeba
# (PREPARED/testsets.env).
#
# PREPARED is a directory made by prepare-wmt19-de-en.sh, prepare-wmt19-zh-en.sh or
# prepare-toy.sh; its tokenization, segmentation (BPE codes / SentencePiece models) and
# dictionaries are used.
# Each set goes to PREPARED/testsets/NAME/:
#   raw.SRC raw.TGT     the text as distributed (references for BLEU/TER)
#   tok.SRC tok.TGT     normalised (and for De->En Moses-tokenized) text
#   seg.SRC seg.TGT     subword-segmented text (source lengths for the length buckets)
#   bin/                fairseq binary data, split "test", with the training dictionaries
#   meta.env            what translate.sh needs (PREP_DIR, SRC, TGT, LINES)
#
# Options:
#   --work-dir DIR     the prepared directory (required)
#   --sets LIST        sets to build (see above)
#   --local-dir DIR    where the WMT test sets are (plain newstestYYYY.de/.en, the .sgm files
#                      or dev.tgz/test.tgz); default: the directories the preparation used
#   --offline          never download (default: as the preparation)
#   --online           allow downloading dev.tgz/test.tgz from data.statmt.org
#   --threads N        parallel workers
#   --dry-run          list every step with its command and whether it is done; run nothing
#   -h, --help         this help
# Re-running skips what is done: each step's manifest (PREPARED/testsets/NAME/.steps/) records
# its command and the content of its inputs, so a set is rebuilt when its text, the
# segmentation or the dictionaries changed, or a file of it was deleted (docs/reproducing.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe build-test-sets "$@"
