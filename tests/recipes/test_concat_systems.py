"""Systems trained on the concatenation-augmented data (--concat-systems): rows of their own,
ARCH+concat, in the demo's reports and on the leaderboard's boards, trained on
data-bin/lenN-concat; the leaderboard on a folder prepared beforehand (--data DIR); and the
report's default buckets at multiples of the training limit."""
import json

import pytest

from recipe_graphs import recipe_graph, words
from relpos_analysis import report
from test_pipelines import SCRIPTS, run


def option(step, name):
    argv = step.argv()
    return argv[argv.index(name) + 1]


def test_the_demo_trains_and_reports_a_concat_system_of_its_own(tmp_path, monkeypatch):
    out = tmp_path / "demo"
    graph = recipe_graph(monkeypatch, "demo", "--quick", "--systems", "transformer_abs,transformer_rel",
                         "--concat-systems", "transformer_abs", "--out-dir", out)
    data = out / "data"
    preparation = {step.name: step for step in graph.job("prepare").steps}
    assert f"concat_augment --src {data}/len50/train.src --tgt {data}/len50/train.tgt --max-len 50 --share 1 " \
           "--seed 1" in words(preparation["concat.len50"])
    assert option(preparation["bin.len50-concat"], "--validpref") == f"{data}/len50/valid"
    (training,) = [step for step in graph.job("transformer_abs+concat").steps if step.name == "train"]
    assert training.home == out / "transformer_abs+concat" and option(training, "--arch") == "transformer_abs"
    assert option(training, "fairseq-train") == f"{data}/data-bin/len50-concat/shard0"
    reported = next(step for step in graph.job("reports").steps if step.home == out / "report" / "test")
    assert f"--system transformer_abs+concat={out}/transformer_abs+concat/test/hyp.txt" in words(reported)
    assert option(reported, "--baseline") == "transformer_abs"
    assert not list(tmp_path.rglob("*")), "a plan writes nothing"


def test_the_leaderboard_tunes_a_concat_system_as_a_scheme(tmp_path, monkeypatch):
    graph = recipe_graph(monkeypatch, "leaderboard", "--quick", "--systems", "transformer_abs", "--concat-systems",
                         "transformer_abs", "--seeds", "1", "--out-dir", tmp_path / "board")
    assert "bin.len50-concat" in {step.name for step in graph.job("prepare").steps}
    (training,) = graph.job("transformer_abs+concat-lr3e-3").steps
    assert training.name == "train" and option(training, "fairseq-train").endswith("data-bin/len50-concat/shard0")
    chooser = graph.job("transformer_abs+concat")
    assert [step.name for step in chooser.steps] == ["choose-transformer_abs+concat"]
    assert chooser.later.title == "transformer_abs+concat: the other seeds and the translations at its chosen rate"
    (tuning,) = graph.job("boards").steps
    assert "transformer_abs+concat=" in words(tuning)


@pytest.mark.parametrize("args, message", [
    (["--concat-systems", "transformer_nope_typo"], "--concat-systems: unknown architecture"),
    (["--data", "{tmp}"], "--data {tmp}: a --train-limit it was prepared at is needed (it has no data-bin/lenN"),
])
def test_the_leaderboard_refuses_what_it_cannot_train(tmp_path, args, message):
    proc = run(["bash", SCRIPTS / "leaderboard.sh", "--dry-run", "--quick", "--systems", "transformer_abs",
                *[a.format(tmp=tmp_path) for a in args], "--out-dir", tmp_path / "board"], check=False)
    assert proc.returncode != 0 and message.format(tmp=tmp_path) in proc.stderr, proc.stderr


def test_the_leaderboard_takes_the_limit_a_folder_was_prepared_at(tmp_path):
    from relpos_recipes.engine import StepError
    from relpos_recipes.graphs.leaderboard import folder_limit

    for name in ("len20", "len20-concat", "band1-5"):
        (tmp_path / "data-bin" / name).mkdir(parents=True)
    assert folder_limit(tmp_path, None) == 20 and folder_limit(tmp_path, 20) == 20
    with pytest.raises(StepError, match="--train-limit 30 it was prepared at is needed \\(it was prepared at 20"):
        folder_limit(tmp_path, 30)


def test_the_report_buckets_at_multiples_of_the_training_limit_by_default(tmp_path):
    refs = [" ".join(["w"] * n) for n in range(1, 41)]
    for name in ("src", "ref", "hyp"):
        (tmp_path / name).write_text("\n".join(refs) + "\n")
    assert report.main(["--source", str(tmp_path / "src"), "--ref", str(tmp_path / "ref"), "--system",
                        f"a={tmp_path / 'hyp'}", "--tokenize", "none", "--metrics", "bleu", "--bootstrap", "0",
                        "--train-limit", "10", "--no-cache", "--json", str(tmp_path / "r.json")]) == 0
    buckets = [r["bucket"] for r in json.loads((tmp_path / "r.json").read_text()) if r["bucket"] != "all"]
    assert buckets == ["G0:10", "G11:15", "G16:20", "G21:30", "G31:∞"]


def test_the_leaderboard_adds_lenN_concat_to_a_folder_prepared_without_it(tmp_path):
    """With lenN's dev set (the one within the limit where it was prepared so); nothing where
    the folder has its own."""
    from pathlib import Path

    from relpos_recipes.graphs.systems import SystemsRun
    from relpos_recipes.graphs.leaderboard import folder_concat_steps

    (tmp_path / "segmentation.env").write_text("PAIR=de-en\nSRC=de\nTGT=en\nTEXTPROC=moses\nSEG=bpe\n")
    run_ = SystemsRun(archs=["transformer_abs"], limit=20, updates=10, seed=3, out=tmp_path / "out", quick=True,
                   threads=1, gpus=0, data_dir=tmp_path, concat=["transformer_abs"])

    def validpref():
        steps = folder_concat_steps(run_)
        assert [step.name for step in steps] == ["concat.len20", "bin.len20-concat"]
        assert "--seed 3" in " ".join(map(str, steps[0].command))
        command = list(map(str, steps[1].command))
        return Path(command[command.index("--validpref") + 1])

    assert validpref() == tmp_path / "seg" / "valid"
    (tmp_path / "len20").mkdir()
    (tmp_path / "len20" / "valid.de").write_text("a\n")
    assert validpref() == tmp_path / "len20" / "valid"
    (tmp_path / ".steps").mkdir()
    (tmp_path / ".steps" / "concat.len20.json").write_text("{}")
    assert folder_concat_steps(run_) == []
