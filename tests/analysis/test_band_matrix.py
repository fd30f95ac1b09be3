"""The band matrix (relpos_analysis.bands_model and its command line relpos_analysis.bands): on
hand-made lists, each system is perfect on its own band and wrong elsewhere, so the matrix
has its diagonal, the tests against the diagonal and the failure columns where they must be;
the command line writes every format and refuses bad input before any scoring."""
import json

import pytest

from relpos_analysis import bands_model, bands_render, bands
from relpos_analysis.buckets import Bucket
from relpos_analysis.report_model import ScoringOptions

TRAIN = [Bucket(1, 4), Bucket(5, 8)]
TEST = [Bucket(1, 4), Bucket(5, 8), Bucket(9, 12)]
OPTIONS = ScoringOptions(metrics=("bleu",), tokenize="none", n_bootstrap=200, seed=1, workers=1)


def corpus(n=40):
    """Sentences of 2 to 12 tokens; each system translates its own band (1-4 or 5-8) right,
    the other lengths wrong: the short system stops half-way, the long one loops."""
    refs = [" ".join(f"w{(i * 3 + k) % 17}" for k in range(2 + i % 11)) for i in range(n)]
    lengths = [len(ref.split()) for ref in refs]

    def system(band, failure):
        return [ref if band.contains(n) else failure(ref) for ref, n in zip(refs, lengths)]

    short = system(TRAIN[0], lambda ref: " ".join(ref.split()[:len(ref.split()) // 3]))
    long = system(TRAIN[1], lambda ref: " ".join(["x y"] * 4 + ref.split()[:1]))
    return lengths, refs, [short, long]


def test_the_diagonal_peaks_and_the_cells_off_it_are_tested_against_it():
    lengths, refs, hyps = corpus()
    matrix = bands_model.band_matrix("abs", lengths, [refs], hyps, TRAIN, TEST, OPTIONS)
    assert matrix.sizes == [sum(b.contains(n) for n in lengths) for b in TEST]
    assert [matrix.diagonal(column) for column in range(3)] == [0, 1, None]
    bleu = {(r, c): cells["bleu"] for (r, c), cells in matrix.cells.items()}
    assert bleu[0, 0].score == pytest.approx(100) and bleu[1, 1].score == pytest.approx(100)
    assert bleu[1, 0].score < 30 and bleu[0, 1].score < 30
    assert bleu[0, 0].p_value is None and bleu[1, 0].p_value < 0.05  # against the column's diagonal
    assert bleu[0, 2].p_value is None and bleu[0, 2].ci_lo is not None  # no diagonal: intervals only
    failures = {(r, c): cells for (r, c), cells in matrix.cells.items()}
    assert failures[0, 1]["short"].score == pytest.approx(100) and failures[0, 0]["short"].score == 0
    assert failures[1, 0]["loop"].score == pytest.approx(100) and failures[1, 1]["loop"].score == 0


def test_the_tables_mark_the_diagonal_and_the_significant_falls():
    lengths, refs, hyps = corpus(120)
    matrix = bands_model.band_matrix("abs", lengths, [refs], hyps, TRAIN, TEST, OPTIONS)
    text = bands_render.markdown([matrix], "Bands")
    assert "## Bands: abs, BLEU" in text and "## Bands: abs, short %" in text
    bleu_table = text.split("## Bands: abs, empty %")[0]
    row = next(line for line in bleu_table.splitlines() if line.startswith("| 1–4 |"))
    cells = row.split(" | ")
    assert cells[1].startswith("**100.0") and cells[1].endswith("**") and cells[2].endswith("\\*")
    assert "| tested on 9–12 |" in bleu_table
    latex = bands_render.latex([matrix], "Bands")
    assert "\\textbf{100.0" in latex and "1--4" in latex
    records = bands_render.records([matrix])
    assert len(records) == 2 * 3 * 4  # train bands x test bands x (BLEU, empty, short, loop)
    diagonal = [r for r in records if r["diagonal"] and r["metric"] == "bleu"]
    assert {(r["train_band"], r["test_band"]) for r in diagonal} == {("1:4", "1:4"), ("5:8", "5:8")}


def write(path, rows):
    path.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    return str(path)


def test_the_command_line_writes_every_format_and_a_heatmap(tmp_path, capsys):
    lengths, refs, hyps = corpus()
    files = [write(tmp_path / f"hyp{k}.txt", h) for k, h in enumerate(hyps)]
    scores = [write(tmp_path / f"hyp{k}.scores", [f"-{k + 1}.5"] * len(refs)) for k in range(2)]
    argv = ["--ref", write(tmp_path / "ref.txt", refs), "--length-file", write(tmp_path / "len.txt", refs),
            "--train-bands", "1:4,5:8", "--test-bands", "1:4,5:8,9:12", "--system", "abs=" + ",".join(files),
            "--system", "rel=" + ",".join(reversed(files)), "--system-scores", "abs=" + ",".join(scores),
            "--system-scores", "rel=" + ",".join(scores), "--tokenize", "none", "--bootstrap", "100",
            "--workers", "1", "--no-cache", "--out-dir", str(tmp_path / "out"), "--title", "Bands"]
    assert bands.main(argv) == 0
    out = tmp_path / "out"
    for name in ("bands.md", "bands.json", "bands.csv", "bands.tex", "heatmap.png", "heatmap.pdf"):
        assert (out / name).stat().st_size > 0, name
    assert "## Bands: rel, log2 p/token" in capsys.readouterr().out
    records = json.loads((out / "bands.json").read_text())["records"]
    assert {r["scheme"] for r in records} == {"abs", "rel"}
    logprob = [r for r in records if r["metric"] == "logprob" and r["scheme"] == "abs"]
    assert {r["train_band"]: r["score"] for r in logprob} == {"1:4": -1.5, "5:8": -2.5}
    assert (out / "bands.csv").read_text().splitlines()[0].startswith("scheme,train_band,test_band,diagonal,n,metric")


@pytest.mark.parametrize("change, message", [
    ({"--train-bands": "1:4,3:8"}, "--train-bands: the bands 1:4 and 3:8 overlap"),
    ({"--test-bands": "x"}, "--test-bands: expected a length band LO:HI"),
    ({"--system": "abs=ONE"}, "--system abs: 1 files for the 2 --train-bands"),
    ({"--system-scores": "abs=ONE,ONE"}, "--system-scores abs: no such file"),
])
def test_bad_input_is_refused_before_any_scoring(tmp_path, capsys, change, message):
    lengths, refs, hyps = corpus()
    files = [write(tmp_path / f"hyp{k}.txt", h) for k, h in enumerate(hyps)]
    options = {"--ref": write(tmp_path / "ref.txt", refs), "--length-file": write(tmp_path / "len.txt", refs),
               "--train-bands": "1:4,5:8", "--system": "abs=" + ",".join(files)}
    options.update({k: v.replace("ONE", files[0]) for k, v in change.items()})
    if "--system-scores" in change:
        options["--system-scores"] = "abs=" + ",".join([str(tmp_path / "absent")] * 2)
    argv = [part for option, value in options.items() for part in (option, value)]
    assert bands.main(argv + ["--out-dir", str(tmp_path / "out"), "--no-cache"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_command_is_declared_as_the_console_script_its_help_names():
    """setup.py installs each command under the name its --help shows (relpos-bands among
    them): read from setup.py's entry points, each resolves to the module's main, whose
    parser has that prog."""
    import ast
    import importlib
    from pathlib import Path

    setup = ast.parse((Path(__file__).resolve().parents[2] / "setup.py").read_text())
    call = next(node for node in ast.walk(setup) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "setup")
    entry_points = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "entry_points"))
    scripts = dict(spec.split("=") for spec in entry_points["console_scripts"])
    assert set(scripts) >= {"relpos-report", "relpos-leaderboard", "relpos-bands"}
    for name in ("relpos-report", "relpos-leaderboard", "relpos-bands"):
        module, function = scripts[name].split(":")
        command = importlib.import_module(module)
        assert function == "main" and callable(command.main)
        assert command.build_parser().prog == name
