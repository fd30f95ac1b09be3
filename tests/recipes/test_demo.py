"""The README's main command, reduced: `bash scripts/demo.sh --quick` runs to its reports; then
the leaderboard's quick mode on the same folder reuses its data."""
import json
import re
import shutil
import subprocess

import pytest

from conftest import REPO_ROOT
from recipe_graphs import recipe_graph
from relpos_recipes.engine.plan import plan

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("quick_demo")]  # one worker, in order

# two of the demo's four systems (the four: test_the_demo_trains_its_four_systems_by_default); every
# architecture trains and translates through fairseq's commands in tests/plugin/test_cli.py
SYSTEMS = {"transformer_abs", "transformer_rel_k"}


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory):
    """The quick demo's folder and run; session-scoped, so that the leaderboard test finds it
    even when other tests run between the two on this worker."""
    out = tmp_path_factory.mktemp("quick") / "demo"
    # --quick trains 200 updates; 30 exercise the same steps (demo.sh --quick --updates 30 took
    # 86 s on one core against 107 s with 60, its translations no slower)
    demo = ["bash", str(REPO_ROOT / "scripts/demo.sh"), "--quick", "--updates", "30",
            "--systems", ",".join(sorted(SYSTEMS)), "--out-dir", str(out)]
    return out, demo, subprocess.run(demo, capture_output=True, text=True, timeout=900)


def test_quick_demo_runs_to_its_reports(quick_demo):
    out, demo, result = quick_demo
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "| transformer_rel_k |" in result.stdout
    # a progress line per system, not fairseq's output (that is in each system's train.log)
    assert re.search(r"\[transformer_rel_k\] train \d+/30 updates", result.stdout)
    assert "| INFO |" not in result.stdout and "num_updates" in (out / "transformer_rel_k" / "train.log").read_text()
    for phase in ("preparing the data and the test sets", "training and translating", "the reports"):
        assert re.search(rf"{phase} took \d+ s", result.stderr), phase
    for test_set, pairs in (("test", 60), ("concat_seq", 30)):
        report = out / "report" / test_set
        assert f"report: {report} " in result.stdout
        records = json.loads((report / "report.json").read_text())
        assert {record["system"] for record in records} == SYSTEMS
        assert sum(r["n"] for r in records if r["system"] == "transformer_abs" and r["bucket"] != "all") == pairs
        assert all(record["bleu"] is not None for record in records if record["n"])
        for name in ("report.md", "buckets.png", "lengths.png"):
            assert (report / name).stat().st_size > 0
    # a re-run reuses every finished step
    again = subprocess.run(demo, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert again.stderr.count("skip  train ") == len(SYSTEMS)
    assert again.stderr.count("skip  translate ") == 2 * len(SYSTEMS)
    assert "start " not in again.stderr


def test_quick_leaderboard_chooses_each_learning_rate_and_keeps_a_failed_system_on_the_board(quick_demo):
    """The protocol on the demo's data: two learning rates for the scheme, the one with the
    lower dev loss chosen; a scheme whose every training fails (its log cannot be written: a
    folder is in its way) stays on the board with its error.  (Several schemes ranked on one
    board: tests/analysis/test_leaderboard.py; seeds at the chosen rate: the leaderboard on
    SLURM, tests/cluster/test_slurm_runner.py.)"""
    quick_demo, _, demo_result = quick_demo
    assert demo_result.returncode == 0, "the quick demo failed (see the test above)"
    models = quick_demo / "leaderboard" / "models"
    for lr in ("3e-3", "1e-2"):
        (models / f"transformer_alibi-lr{lr}" / "train.log").mkdir(parents=True)
        (models / f"transformer_alibi-lr{lr}" / ".steps").mkdir()  # a folder of the leaderboard's
    board = ["bash", str(REPO_ROOT / "scripts/leaderboard.sh"), "--quick", "--updates", "30",
             "--systems", "transformer_abs,transformer_alibi", "--seeds", "1",
             "--lr-grid", "3e-3,1e-2", "--out-dir", str(quick_demo)]
    result = subprocess.run(board, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "skip  train" not in result.stderr  # the data is the demo's, the models the board's own
    tuning = json.loads((quick_demo / "leaderboard" / "tuning.json").read_text())["schemes"]
    grid = tuning["transformer_abs"]["grid"]
    assert set(grid) == {"3e-3", "1e-2"} and all(point["dev_loss"] for point in grid.values())
    assert tuning["transformer_abs"]["chosen"] == min(grid, key=lambda lr: grid[lr]["dev_loss"])
    assert tuning["transformer_alibi"]["chosen"] is None
    for test_set in ("test", "concat_seq"):
        folder = quick_demo / "leaderboard" / test_set
        records = json.loads((folder / "board.json").read_text())["records"]
        assert {r["system"] for r in records if r["rank"]} == {"transformer_abs"}
        failed = [r for r in records if r["system"] == "transformer_alibi"]
        assert failed and "cannot write" in failed[0]["failure"] and "train.log" in failed[0]["failure"]
        assert all(r["parameters"] for r in records if r["rank"])
        for name in ("board.md", "board.csv", "board.tex", "bleu.png", "length_ratio.png"):
            assert (folder / name).stat().st_size > 0
    # progress lines per system, not fairseq's output
    assert re.search(r"\[transformer_abs-lr1e-2\] train 30/30 updates · dev loss [\d.]+", result.stdout)
    assert "| INFO |" not in result.stdout


def test_a_copied_demo_is_still_done_and_a_change_redoes_what_it_changes(quick_demo, tmp_path, monkeypatch):
    """A copied (or moved) --out-dir is the same run: its plan has nothing to do.  An edit to
    the training text redoes every step after it; another --updates redoes the trainings and
    what follows them, none of the data's steps, and a training redone removes only what
    fairseq-train writes, never a user's checkpoint or notes beside it (the engine's side of
    both, in-process: tests/engine/test_steps.py)."""
    out, demo, result = quick_demo
    assert result.returncode == 0, "the quick demo failed (see the test above)"
    copy = tmp_path / "copied demo"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("lock"))
    options = demo[demo.index("--quick"):demo.index("--out-dir")]
    assert options[:3] == ["--quick", "--updates", "30"]

    def demo_plan(*argv):
        return plan(recipe_graph(monkeypatch, "demo", *argv, "--out-dir", copy))

    copied = demo_plan(*options)
    assert copied.steps and not copied.pending() and not copied.unbuilt
    train_src = copy / "data" / "text" / "train.src"
    original = train_src.read_bytes()
    train_src.write_bytes(original + b"w1 w2\n")
    edited = demo_plan(*options)
    after = [step for step in edited.steps if step.name in ("train", "translate", "report")]
    assert after and edited.pending() >= set(after)
    train_src.write_bytes(original)
    changed = demo_plan("--quick", "--updates", "31", *options[3:])
    trainings = [step for step in changed.steps if step.name == "train"]
    assert {step.home.name for step in trainings} == SYSTEMS
    assert all(changed.states[step].reason == "done before with another command" for step in trainings)
    assert not [step for step in changed.pending() if step.home.is_relative_to(copy / "data")]
    owned = [re.compile(pattern) for pattern in trainings[0].policy.owns]
    assert not [name for name in ("checkpoint_mine.pt", "NOTES.txt") if any(m.fullmatch(name) for m in owned)]
    assert all(any(m.fullmatch(path.name) for m in owned) for path in trainings[0].in_place_outputs)


def test_the_demo_trains_its_four_systems_by_default(tmp_path, monkeypatch):
    """Without --systems: the four of the README's tables, absolute first (the baseline)."""
    graph = recipe_graph(monkeypatch, "demo", "--quick", "--out-dir", tmp_path / "demo")
    trained = [step.home.name for step in plan(graph).steps if step.name == "train"]
    assert trained == ["transformer_abs", "transformer_rel", "transformer_rel_k", "transformer_lstm_pos"]
