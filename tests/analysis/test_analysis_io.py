"""Reading and writing without losing or inventing anything: fairseq-generate's best
hypothesis in both readers (the report's and the translate step's gen_output.py), files
written all or nothing, and statistics-cache entries used only when whole."""
import os

import numpy as np
import pytest

from relpos_analysis import io as analysis_io
from relpos_analysis.cache import StatisticsCache
from relpos_analysis.io import InputError, fairseq_segments, read_lines, read_segments
from relpos_analysis.metrics import MetricConfig, sentence_statistics, signature
from relpos_recipes.tools.fairseq_generate import write_hypotheses


# fairseq-generate --nbest 2: each id's best hypothesis first, then the second best
NBEST_LOG = """2026-01-01 12:00:00 | INFO | fairseq_cli.generate | loading model
S-1\tsecond source
T-1\tsecond target
H-1\t-0.20\tbest of one
D-1\t-0.20\tbest of one
P-1\t-0.1 -0.3
H-1\t-0.90\tworse of one
D-1\t-0.90\tworse of one
P-1\t-0.5 -1.3
S-0\tfirst source
T-0\tfirst target
H-0\t-0.10\tbest of zero
D-0\t-0.10\tbest of zero
H-0\t-0.70\tworse of zero
D-0\t-0.70\tworse of zero
Generate test with beam=5: BLEU4 = 30.00
"""


def test_gen_output_writes_the_best_of_nbest_hypotheses(tmp_path):
    log = tmp_path / "generate.log"
    log.write_text(NBEST_LOG, encoding="utf-8")
    out = tmp_path / "hyp.seg"
    write_hypotheses(log, 2, out)
    assert out.read_text(encoding="utf-8") == "best of zero\nbest of one\n"
    assert read_segments(log, "system") == ["best of zero", "best of one"]
    assert sorted(tmp_path.iterdir()) == [log, out]


def test_one_reader_refuses_missing_and_extra_sentences():
    lines = ["H-0\t-1\ta", "H-2\t-1\tc"]
    with pytest.raises(InputError, match=r"gen\.log has no hypothesis for 1 of 3 sentences \(ids \[1\]\): "
                                         "fairseq skipped them"):
        fairseq_segments(lines, "H", "gen.log")
    with pytest.raises(InputError, match=r"gen\.log has hypothesis lines for ids \[2\] beyond the 2 source lines"):
        fairseq_segments(lines, "H", "gen.log", n_sentences=2)
    with pytest.raises(InputError, match=r"no reference for 2 of 4 sentences \(ids \[1, 3\]\)"):
        fairseq_segments(["T-0\ta", "T-2\tc"], "T", "gen.log", n_sentences=4)
    assert fairseq_segments(lines[:1], "H", "gen.log", n_sentences=1) == ["a"]


def test_gen_output_names_the_log_it_cannot_use(tmp_path):
    for log, message in ((tmp_path, f"error: --log: {tmp_path} is a folder; expected a file"),
                         (tmp_path / "gone.log", f"error: --log: no such file: {tmp_path / 'gone.log'}")):
        with pytest.raises(SystemExit) as refused:
            write_hypotheses(log, 2, tmp_path / "hyp.seg")
        assert str(refused.value) == message
    assert not (tmp_path / "hyp.seg").exists()


def test_a_byte_order_mark_is_not_part_of_the_first_sentence(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffCome on.\nGo.\n".encode("utf-8"))
    assert read_lines(path) == ["Come on.", "Go."]


def test_a_failure_midway_leaves_the_previous_files(tmp_path, monkeypatch):
    """Moving the third of four new files in fails: the folder keeps the previous set, whole."""
    from relpos_analysis.io import write_files

    names = ["a.md", "b.json", "c.csv", "d.tex"]
    old = {tmp_path / name: f"old {name}".encode() for name in names[:3]}  # d.tex is new
    write_files(old)
    real_replace, calls = os.replace, []

    def failing_replace(source, target):
        calls.append(target)
        if len(calls) == 6:  # old aside and new in for a.md and b.json, c.csv's old aside, its new in
            raise OSError(28, "No space left on device", str(target))
        real_replace(source, target)

    monkeypatch.setattr(analysis_io.os, "replace", failing_replace)
    with pytest.raises(InputError, match="cannot write .*c.csv: No space left on device"):
        write_files({tmp_path / name: f"new {name}".encode() for name in names})
    monkeypatch.setattr(analysis_io.os, "replace", real_replace)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == {
        path.name: data for path, data in old.items()}


def test_damaged_statistics_entries_are_recomputed_and_said(tmp_path):
    references = [["the cat sat on the mat", "a dog barked twice", "rain again"]]
    systems = {"sys": ["the cat sat on a mat", "a dog barked", "rain"]}
    configs = [MetricConfig("bleu"), MetricConfig("ter")]
    warnings = []
    cache = StatisticsCache(tmp_path, warn=warnings.append)
    fresh = sentence_statistics(configs, references, systems, workers=1)
    keys = {config.name: cache.key(signature(config, 1), references, systems["sys"]) for config in configs}

    def cached():
        stats = sentence_statistics(configs, references, systems, workers=1, cache=cache)
        for metric in stats:
            assert np.array_equal(stats[metric]["sys"], fresh[metric]["sys"]), metric
        return stats

    # an entry of the right length but the wrong width, written whole (checksum and all)
    cache.save(keys["bleu"], fresh["bleu"]["sys"][:, :2])
    cached()
    assert len(warnings) == 1 and "damaged" in warnings[0] and "shape (3, 2)" in warnings[0]
    # an entry whose bytes changed after it was written
    (entry,) = [path for path in tmp_path.iterdir() if path.name.startswith(keys["ter"])]
    data = bytearray(entry.read_bytes())
    data[-1] ^= 0x40
    entry.write_bytes(bytes(data))
    cached()
    assert len(warnings) == 2 and "checksum" in warnings[1] and str(entry) in warnings[1]
    cached()  # both recomputed and saved whole: no more warnings
    assert len(warnings) == 2
