"""Stock fairseq features that numpy 2 and bitarray 3 broke, restored by the start-up fixes:
each is driven for real (in this process, where the fixes are on), and fails again with its
fix switched off (in a fresh process)."""
import contextlib
import io
import sys

import pytest

from conftest import TINY_TRAIN_ARGS, fairseq, fairseq_in_process, write_reversal_corpus
from test_compat import python

NUMPY2_API_OFF = {"FAIRSEQ_RELPOS_COMPAT_NUMPY2_API": "0"}


@pytest.mark.slow
def test_translation_trains_with_batch_buckets(reversal_data_bin, tmp_path):
    """--num-batch-buckets: fairseq's length buckets call np.percentile(interpolation=) and
    the language-pair dataset names np.compat.long, both removed by numpy 2."""
    command = [
        "fairseq-train", reversal_data_bin, "--user-dir", "fairseq_relpos",
        "--arch", "transformer_rel", *TINY_TRAIN_ARGS, "--max-update", 4, "--cpu",
        "--num-batch-buckets", 4, "--save-dir", tmp_path / "ckpt", "--no-save",
    ]
    log = fairseq_in_process(*command)
    assert "bucketing source lengths" in log and "bucketing target lengths" in log
    assert "num_updates 4" in log

    without_fix = fairseq(*command, check=False, env=NUMPY2_API_OFF)
    assert without_fix.returncode != 0 and "interpolation" in without_fix.stderr


@pytest.mark.slow
def test_language_model_trains_with_eos_break_mode(tmp_path):
    """--sample-break-mode eos: the token-block dataset names np.compat.long."""
    text = write_reversal_corpus(tmp_path / "text", sizes=(("train", 200), ("valid", 20)))
    fairseq(
        "fairseq-preprocess", "--only-source", "--trainpref", text / "train.src",
        "--validpref", text / "valid.src", "--destdir", tmp_path / "bin", "--workers", 1,
    )
    command = [
        "fairseq-train", tmp_path / "bin", "--task", "language_modeling",
        "--arch", "transformer_lm", "--sample-break-mode", "eos", "--tokens-per-sample", 64,
        "--decoder-layers", 1, "--decoder-embed-dim", 32, "--decoder-ffn-embed-dim", 64,
        "--decoder-attention-heads", 4, "--optimizer", "adam", "--lr", "3e-3",
        "--max-tokens", 1000, "--max-update", 4, "--no-progress-bar", "--log-interval", 1,
        "--seed", 1, "--num-workers", 0, "--cpu", "--save-dir", tmp_path / "ckpt", "--no-save",
    ]
    log = fairseq_in_process(*command)
    assert "num_updates 4" in log and "valid on 'valid' subset" in log

    without_fix = fairseq(*command, check=False, env=NUMPY2_API_OFF)
    assert without_fix.returncode != 0 and "compat" in without_fix.stderr


HUFFMAN_ROUND_TRIP = """
import sys
from fairseq.data import indexed_dataset
from fairseq.data.huffman import HuffmanCodeBuilder, HuffmanMMapIndexedDatasetBuilder

text, prefix = sys.argv[1:]
sentences = [line.split() for line in open(text)]
code_builder = HuffmanCodeBuilder()
for sentence in sentences:
    code_builder.add_symbols(*sentence)
with HuffmanMMapIndexedDatasetBuilder(prefix, code_builder.build_code()) as builder:
    for sentence in sentences:
        builder.add_item(sentence)
dataset = indexed_dataset.make_dataset(prefix, "huffman")  # what --dataset-impl huffman loads
decoded = [list(dataset.get_symbols(i)) for i in range(len(dataset))]
print(len(sentences), decoded == sentences, list(dataset.sizes) == [len(s) for s in sentences])
"""


def test_huffman_dataset_round_trip(tmp_path):
    """--dataset-impl huffman: reading a sentence strips its padding with bitarray's
    util.rindex, which bitarray 3 removed."""
    text = write_reversal_corpus(tmp_path, sizes=(("train", 100),)) / "train.src"
    args = [text, tmp_path / "huffman"]
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(sys, "argv", ["-c", *map(str, args)])
        exec(HUFFMAN_ROUND_TRIP, {"__name__": "__main__"})
    assert printed.getvalue().split() == ["100", "True", "True"]

    without_fix = python(HUFFMAN_ROUND_TRIP, *args, FAIRSEQ_RELPOS_COMPAT_BITARRAY_RINDEX="0")
    assert without_fix.returncode != 0 and "rindex" in without_fix.stderr
