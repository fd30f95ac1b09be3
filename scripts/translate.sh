#!/usr/bin/env bash
# Translate a test set with a trained model; write the hypotheses in source order.
#
# Usage: scripts/translate.sh --checkpoint CKPT --testset DIR --out-dir OUT [options]
#                             [fairseq-generate args]
#
#   CKPT   e.g. runs/wmt19-de-en/transformer_rel-len100/checkpoint_best.pt
#   DIR    a test set from build-test-sets.sh (PREPARED/testsets/NAME)
#
# Runs fairseq-generate (beam search) over DIR/bin, then undoes the segmentation (BPE "@@ "
# joins / SentencePiece decoding) and the tokenization (sacremoses detokenize) of the data
# the test set was prepared with.  Output length limit: --max-len-a x source length +
# --max-len-b (default 2J+10 subword tokens), capped only by the model's maximum target
# positions (1024 unless the model says otherwise): far beyond the 100 (or 75) tokens of any
# training sentence, so long sources are not cut short by the decoder.
#
# OUT/generate.log  fairseq-generate's output
# OUT/hyp.seg       hypotheses, segmented, line i = source line i
# OUT/hyp.tok       segmentation undone (tokenized text, as the study scored)
# OUT/hyp.txt       detokenized text (what the analysis report scores)
# OUT/hyp.scores    each hypothesis's mean log2-probability per token (fairseq's P- line;
#                   relpos-report --system-scores reads it)
#
# Options:
#   --beam N          (default 5)
#   --lenpen X        length penalty (default 1.0)
#   --max-len-a X     (default 2)
#   --max-len-b N     (default 10)
#   --max-tokens N    tokens per generation batch (default 8000)
#   --user-dir DIR    plugin to load (default: what train.sh recorded next to CKPT)
#   --cpu             run on CPU even if a GPU is visible (CPU runs use OMP_NUM_THREADS=1
#                     unless it is set)
#   --oracle-length   decode each sentence with its reference's length in target subwords
#                     (end of sentence forbidden before it, forced at it; the plugin's
#                     relpos_translation task): what the model writes when it need not
#                     decide where to stop (docs/analysis.md, oracle-length decoding)
#   --dry-run         print the fairseq-generate command and exit
#   -h, --help        this help
# Every sentence gets its translation, or the script fails: a source longer than the model's
# maximum positions is an error, never an empty hypothesis.  Refused before any work: a test
# set whose dictionaries are not the model's (another size, or the same words in another
# order: another preparation), and an OUT holding a hyp.txt (or another output) no run made.
# Re-running does nothing when the manifest OUT/.steps/translate.json records the same
# fairseq-generate command (checkpoint, test set, beam and every other option) and the same
# content of CKPT and the test set; otherwise it translates again.  Its output: OUT/translate.log.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/recipe.sh"
relpos_recipe translate "$@"
