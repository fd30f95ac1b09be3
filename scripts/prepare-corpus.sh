#!/usr/bin/env bash
# Prepare any parallel corpus for the length study: your files, in fairseq-preprocess's
# convention (PREFIX.SRC and PREFIX.TGT, one sentence per line, line-parallel).
#
# Usage: scripts/prepare-corpus.sh --train PREFIX [--dev PREFIX] --test NAME=PREFIX [...]
#            --src-lang SRC --tgt-lang TGT --train-limit N --out-dir DIR [options]
#
# Steps (the same as the other prepare-*.sh scripts from step 2 on):
#   1. check every file before anything is written: UTF-8 text, a sentence on every line (no
#      empty line), no line break inside a line, as many lines on both sides; a refusal names
#      the file and the line, and DIR is not created.  A UTF-8 byte-order mark and CRLF line
#      ends are read as Tatoeba's check reads them (relpos_recipes/tools/user_corpus.py).  The
#      files are taken into DIR/split/ (the dev set held out of --train when --dev is not
#      given: --dev-pairs pairs drawn from --seed among those whose sides have at most
#      --train-limit words, characters for zh and ja).  Each test set's pairs, and sources,
#      that occur in the training pairs (spaces normalised) are counted, printed and recorded
#      in DIR/overlap.env; a test set of which more than 1% of pairs are training pairs is
#      refused, by name, unless --allow-overlap (1% of memorised pairs moves BLEU by up to
#      about 0.7 points: the size of the differences between schemes a board ranks);
#   2. --segmentation bpe: Moses punctuation normalization and tokenization (sacremoses, -a),
#      then joint BPE (subword-nmt, --bpe-merges merges learned on the training side);
#      spm: punctuation normalization, then a SentencePiece model per language (--spm-vocab
#      pieces); none: the files are tokenized already and taken as they are, split on
#      whitespace (nothing normalised, and translations are not detokenized);
#   3. clean: drop empty lines and pairs whose length ratio exceeds --clean-ratio;
#   4. dictionaries, the training length filter (a pair is dropped when its source OR target
#      has more than --train-limit subword tokens) and binarization to
#      DIR/data-bin/lenN for train.sh; with --train-band, DIR/data-bin/bandLO-HI too; with
#      --concat-augment, DIR/data-bin/lenN-concat;
#   5. test sets: each --test NAME, and concat_seq (the first test set's pairs joined two by
#      two), in DIR/testsets/NAME for translate.sh (build-test-sets.sh --sets concat3_seq
#      adds pairs joined three by three).
# Then train.sh --data DIR/data-bin/lenN, translate.sh --testset DIR/testsets/NAME,
# leaderboard.sh --data DIR and reproduce/bands.sh --data DIR take the folder.
#
# Options:
#   --train PREFIX           the training pairs: PREFIX.SRC and PREFIX.TGT
#   --dev PREFIX             the dev pairs (default: --dev-pairs pairs held out of --train)
#   --test NAME=PREFIX       a test set; repeat for several (the first is binarized beside the
#                            training data and joined into concat_seq)
#   --src-lang SRC           the source files' suffix (e.g. de)
#   --tgt-lang TGT           the target files' suffix (e.g. en)
#   --segmentation S         bpe (default), spm or none (see step 2)
#   --bpe-merges N           joint BPE merge operations (default 10000)
#   --spm-vocab N            SentencePiece pieces per language (default 8000)
#   --train-limit N          training length limit in subword tokens (tokens with none)
#   --out-dir DIR            the prepared folder (new or empty, or prepared before)
#   --dev-pairs N            dev pairs held out of --train (default 1000)
#   --dev-within-limit       keep only the dev pairs within the limit in data-bin/lenN (the dev
#                            loss then measures what training can learn; the leaderboard's
#                            choice of learning rates is made on it)
#   --seed N                 seed of the dev hold-out and of --concat-augment (default 1)
#   --clean-ratio R          maximum length ratio of a training pair (default 9)
#   --allow-overlap          prepare test sets of which more than 1% of pairs are training
#                            pairs (their counts are printed and recorded all the same)
#   --train-band LO:HI[,...] also keep the training pairs whose length is LO to HI subword
#                            tokens (both included), and the dev pairs in that band, in
#                            DIR/data-bin/bandLO-HI; repeatable; bands must not overlap
#   --band-side SIDE         what a band measures: longer (the longer side, as the reports
#                            bucket by; default), source or target
#   --concat-augment         also DIR/data-bin/lenN-concat: the training pairs and pairs of them
#                            joined two at a time within the limit (docs/reproducing.md,
#                            "Concatenation augmentation"; Kondo et al. 2021, Nguyen et al. 2021)
#   --concat-share S         the share of the training pairs offered a partner (default 1)
#   --threads N              parallel workers (default: all cores)
#   --dry-run                list every step with its command and whether it is done
#   -h, --help               this help
# Re-running skips completed steps; the settings that define the data cannot change in an
# existing DIR (the preparation refuses, naming what differs).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe prepare-corpus "$@"
