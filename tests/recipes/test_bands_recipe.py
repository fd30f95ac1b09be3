"""The bands recipe (scripts/reproduce/bands.sh) end to end with --quick on the synthetic pair:
each scheme trained on each band, the band matrix in every format; a re-run's plan has
nothing to do.
Then its refusals, before any work."""
import json

import pytest

from conftest import shared_path
from recipe_graphs import recipe_graph
from relpos_recipes.engine.plan import plan
from test_pipelines import SCRIPTS, run


@pytest.mark.slow
def test_a_quick_band_matrix_on_the_synthetic_pair(tmp_path, monkeypatch):
    out = tmp_path / "bands"
    # --quick: two bands, 3,000 pairs, 60 test pairs; 40 updates exercise the same steps, and one
    # scheme the same matrix (its schemes are rows of the same shape: tests/analysis/test_band_matrix.py)
    options = ["--quick", "--updates", "40", "--systems", "transformer_rel", "--out-dir", out, "--threads", "2"]
    result = run(["bash", SCRIPTS / "reproduce/bands.sh", *options])
    for band in ("band1-15", "band16-30"):
        assert (out / "transformer_rel" / band / "test" / "hyp.txt").is_file()
        assert "--arch transformer_rel" in (out / "transformer_rel" / band / "train.log").read_text()
        training = (out / "data" / band / "filter.json").read_text()
        assert json.loads(training)["band"] == band.removeprefix("band").replace("-", ":")
    matrix = out / "matrix"
    for name in ("bands.md", "bands.json", "bands.csv", "bands.tex", "heatmap.png", "heatmap.pdf"):
        assert (matrix / name).stat().st_size > 0, name
    records = json.loads((matrix / "bands.json").read_text())["records"]
    bleu = [r for r in records if r["metric"] == "bleu"]
    assert len(bleu) == 1 * 2 * 3  # schemes x train bands x test bands
    assert {(r["train_band"], r["test_band"]) for r in bleu if r["diagonal"]} == {("1:15", "1:15"), ("16:30", "16:30")}
    assert {r["metric"] for r in records} == {"bleu", "empty", "short", "loop", "logprob"}
    assert sum(r["n"] for r in bleu if r["scheme"] == "transformer_rel" and r["train_band"] == "1:15") <= 60
    assert "## Length bands, the synthetic pair, test" in result.stdout and f"band matrix: {matrix}" in result.stdout
    again = plan(recipe_graph(monkeypatch, "bands", *options))
    assert again.steps and not again.pending() and not again.unbuilt


@pytest.mark.parametrize("args, message", [
    (["--data", "{tmp}"], "--data {tmp}: give the bands to train on (--bands LO:HI,...)"),
    (["--data", "{tmp}", "--bands", "1:10"], "--data {tmp}: not a prepared folder"),
    (["--bands", "1:10,5:20"], "--bands: the bands 1:10 and 5:20 overlap"),
    (["--band-side", "both"], "--band-side: invalid choice: 'both'"),
    (["--from", "deu.txt"], "--from and --download are for --data tatoeba"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, args, message):
    out = tmp_path / "out"
    proc = run(["bash", SCRIPTS / "reproduce/bands.sh", *[a.format(tmp=tmp_path) for a in args], "--out-dir", out],
               check=False)
    assert proc.returncode != 0 and message.format(tmp=tmp_path) in proc.stderr, proc.stderr
    assert not out.exists()


def test_smoke_tatoeba_writes_its_slice_after_checking_the_folder_is_its_own(tmp_path, monkeypatch):
    """SMOKE=1 writes the slice of the export into OUT/data/raw before the graph runs: the
    check that OUT/data is the recipe's own comes first, so a fresh folder reaches the run."""
    from relpos_recipes.graphs import bands

    export = shared_path("data", "tatoeba-deu-eng", "deu.txt")
    monkeypatch.setenv("SMOKE", "1")
    monkeypatch.setenv("SMOKE_DATA", str(export))

    class Ran(Exception):
        pass

    def run(graph, launch):
        raise Ran(graph)

    monkeypatch.setattr(bands, "run", run)
    with pytest.raises(Ran):
        bands.bands_main(["--data", "tatoeba", "--out-dir", str(tmp_path / "out")])
    assert (tmp_path / "out" / "data" / "raw" / "slice.txt").is_file()


def test_the_script_has_its_help():
    out = run(["bash", SCRIPTS / "reproduce/bands.sh", "--help"]).stdout
    assert "Usage:" in out and "--bands LIST" in out and "--slurm-partition" in out
