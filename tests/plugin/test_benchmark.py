"""The benchmark's command line, tiny, on the CPU: what it reports (throughput, ratios,
memory, the kernel each kind of attention layer ran) and the batches it times.  It measures;
nothing here asserts a timing."""
import argparse
import json

import pytest
import torch

from fairseq_relpos.benchmark import Workload, main

TINY = ["--layers", "2", "--dim", "16", "--heads", "2", "--vocab", "50", "--batch", "3", "--repeats", "1"]


def test_the_benchmark_reports_each_length_with_its_kernels(capsys, tmp_path):
    main(["--archs", "transformer_t5,transformer_rel", *TINY, "--lengths", "5,8", "--padding", "--no-memory",
          "--json", str(tmp_path / "bench.json")])
    out = capsys.readouterr().out
    for length in (5, 8):
        assert f"fp32, batch 3x{length} tokens (padded: length/2 … length)" in out
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| transformer_")]
    assert len(rows) == 2 * 2 * 3  # (a timing row, a kernel row) for 3 archs at 2 lengths
    timing = [row for row in rows if row[1] == "reference"]
    assert [row[0] for row in timing[:3]] == ["| transformer_abs", "| transformer_t5", "| transformer_rel"]
    assert timing[0][4] == "1.000x (1.00–1.00)"  # transformer_abs against itself
    # the CPU's fused kernel, the explicit softmax of shaw's value term and of the alignment layer's weights
    assert "| transformer_abs | flash / flash | flash / flash | explicit+flash / explicit+flash |" in out
    assert "| transformer_rel | explicit / explicit | explicit / explicit | explicit+flash / explicit+flash |" in out
    # the same tables as numbers
    record = json.loads((tmp_path / "bench.json").read_text())
    assert record["torch"] == torch.__version__ and record["options"]["padding"] is True
    assert [length["length"] for length in record["lengths"]] == [5, 8]
    rows = record["lengths"][0]["archs"]
    assert list(rows) == ["transformer_abs", "transformer_t5", "transformer_rel"]
    assert rows["transformer_abs"]["train"]["ratio_median"] == 1.0 and rows["transformer_t5"]["peak_train_mib"] is None
    assert len(rows["transformer_rel"]["decode"]["seconds"]) == 1
    assert rows["transformer_rel"]["kernels"]["decoder self-attn train"] == ["explicit"]


@pytest.mark.slow  # a fresh interpreter per arch
def test_the_benchmark_measures_memory_in_a_fresh_process_per_arch(capsys):
    main(["--archs", "transformer_alibi", *TINY, "--lengths", "6"])
    memory = [line.rsplit(" | ", 1)[1].rstrip(" |") for line in capsys.readouterr().out.splitlines()
              if line.startswith("| transformer_") and " | reference | " in line]
    assert len(memory) == 2 and all(float(mib) >= 0 for mib in memory)


def test_flex_is_refused_on_the_cpu(capsys):
    with pytest.raises(SystemExit):
        main(["--archs", "transformer_t5", *TINY, "--attention-impl", "flex", "--device", "cpu"])
    assert "--attention-impl flex: expected --device cuda" in capsys.readouterr().err


def test_padded_batches_are_padded_as_fairseq_pads_them():
    options = argparse.Namespace(layers=1, dim=16, heads=2, vocab=50, batch=8, lengths=[10], padding=True,
                                 dtype="fp32", attention_impl="reference", beam=2)
    workload = Workload("transformer_abs", options, torch.device("cpu"))
    batch, pad, eos = workload.batches[10], workload.dictionary.pad(), workload.dictionary.eos()
    src_padding, tgt_padding = batch["src"].eq(pad), batch["tgt"].eq(pad)
    assert src_padding.any() and tgt_padding.any()
    # sources on the left, targets on the right, each at least half the length
    assert torch.equal(src_padding, src_padding.cummin(dim=1).values)
    assert torch.equal(tgt_padding, tgt_padding.cummax(dim=1).values)
    assert int((~src_padding).sum(1).min()) >= 5 and int((~tgt_padding).sum(1).min()) >= 5
    # decoder inputs: EOS, then the target shifted right, padded where the target is
    assert (batch["prev"][:, 0] == eos).all() and torch.equal(batch["prev"][:, 1:][~tgt_padding[:, 1:]],
                                                              batch["tgt"][:, :-1][~tgt_padding[:, 1:]])
    assert torch.equal(batch["prev"].eq(pad), tgt_padding)
    assert batch["target_tokens"] == int((~tgt_padding).sum())
