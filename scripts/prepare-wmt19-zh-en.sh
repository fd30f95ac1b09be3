#!/usr/bin/env bash
# Prepare the study's WMT19 Chinese->English training data (Rosendahl et al. 2019).
#
# Usage: scripts/prepare-wmt19-zh-en.sh --local-dir DIR [options]
#
#   1. fetch News Commentary v14 (official WMT19 location) and the WMT19 dev/test sets
#      (dev = newsdev2017 + newstest2017, test = newstest2019); take the United Nations
#      Parallel Corpus v1.0 and the CWMT corpora from --local-dir (both need a manual
#      download, see below), or all of them as plain text: news-commentary-v14.en-zh.zh/.en,
#      UNv1.0.en-zh.zh/.en, cwmt.zh/.en, newsdev2017.zh/.en, newstestYYYY.zh/.en;
#   2. normalise punctuation (sacremoses; no tokenization: SentencePiece segments raw text);
#   3. clean: drop empty lines and pairs whose length ratio exceeds --clean-ratio (Chinese
#      length in characters, English in words);
#   4. train and apply SentencePiece unigram models, one per language (--spm-vocab pieces each);
#   5-6. dictionaries, length filter and binarization as in prepare-wmt19-de-en.sh.
#
# Manual downloads (registration required, no public URL):
#   UN v1.0:  https://conferences.unite.un.org/UNCorpus -> the en-zh archive
#             UNv1.0.en-zh.tar.gz (or its parts .tar.gz.00, .01, ...), or the extracted
#             en-zh/UNv1.0.en-zh.{zh,en}
#   CWMT:     the CWMT link on https://www.statmt.org/wmt19/translation-task.html
#             (http://mteval.cipsc.org.cn:81/agreement/wmt, sign the agreement): the
#             sub-corpus zips casia2015.zip, casict2011.zip, casict2015.zip, datum2015.zip,
#             datum2017.zip, neu2017.zip, or a directory cwmt/ with their *_ch.txt|*_cn.txt
#             and *_en.txt files, or one concatenated pair cwmt.zh/cwmt.en
#
# Options:
#   --work-dir DIR        output directory (default: work/wmt19-zh-en in the checkout)
#   --local-dir DIR       look here for the corpora and test sets first (repeatable)
#   --offline             never download
#   --max-len LIST        comma-separated length limits (default 100)
#   --spm-vocab N         SentencePiece vocabulary size per language (default 32000)
#   --corpora LIST        subset of news-commentary,un,cwmt (default all)
#   --clean-ratio R       maximum length ratio of a pair (default 9)
#   --shards N            training shards = checkpoints and dev evaluations per epoch (default 8)
#   --threads N           parallel workers (default: all cores)
#   --dry-run             list every step with its command and whether it is done
#   -h, --help            this help
#
# Re-running skips completed steps; see prepare-wmt19-de-en.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe prepare-wmt19-zh-en "$@"
