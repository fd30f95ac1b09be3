"""The README's main command, reduced: `bash scripts/demo.sh --quick` runs to its reports; then
the leaderboard's quick mode on the same folder reuses its data."""
import json
import re
import shutil
import subprocess

import pytest

from conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("quick_demo")]  # one worker, in order

SYSTEMS = {"transformer_abs", "transformer_rel", "transformer_rel_k", "transformer_lstm_pos"}


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory):
    """The quick demo's folder and run; session-scoped, so that the leaderboard test finds it
    even when other tests run between the two on this worker."""
    out = tmp_path_factory.mktemp("quick") / "demo"
    # --quick trains 200 updates; 60 exercise the same steps in half the time
    demo = ["bash", str(REPO_ROOT / "scripts/demo.sh"), "--quick", "--updates", "60", "--out-dir", str(out)]
    return out, demo, subprocess.run(demo, capture_output=True, text=True, timeout=900)


def test_quick_demo_runs_to_its_reports(quick_demo):
    out, demo, result = quick_demo
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "| transformer_lstm_pos |" in result.stdout
    # a progress line per system, not fairseq's output (that is in each system's train.log)
    assert re.search(r"\[transformer_rel_k\] train \d+/60 updates", result.stdout)
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
    """The protocol on the demo's data: two learning rates per scheme, the one with the lower
    dev loss chosen; a scheme whose every training fails (its log cannot be written: a
    folder is in its way) stays on the board with its error."""
    quick_demo, _, demo_result = quick_demo
    assert demo_result.returncode == 0, "the quick demo failed (see the test above)"
    models = quick_demo / "leaderboard" / "models"
    for lr in ("3e-3", "1e-2"):
        (models / f"transformer_alibi-lr{lr}" / "train.log").mkdir(parents=True)
        (models / f"transformer_alibi-lr{lr}" / ".steps").mkdir()  # a folder of the leaderboard's
    board = ["bash", str(REPO_ROOT / "scripts/leaderboard.sh"), "--quick", "--updates", "60",
             "--systems", "transformer_abs,transformer_rel,transformer_alibi", "--seeds", "1",
             "--lr-grid", "3e-3,1e-2", "--out-dir", str(quick_demo)]
    result = subprocess.run(board, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "skip  train" not in result.stderr  # the data is the demo's, the models the board's own
    tuning = json.loads((quick_demo / "leaderboard" / "tuning.json").read_text())["schemes"]
    for scheme in ("transformer_abs", "transformer_rel"):
        grid = tuning[scheme]["grid"]
        assert set(grid) == {"3e-3", "1e-2"} and all(point["dev_loss"] for point in grid.values())
        assert tuning[scheme]["chosen"] == min(grid, key=lambda lr: grid[lr]["dev_loss"])
    assert tuning["transformer_alibi"]["chosen"] is None
    for test_set in ("test", "concat_seq"):
        folder = quick_demo / "leaderboard" / test_set
        records = json.loads((folder / "board.json").read_text())["records"]
        ranked = sorted({(r["rank"], r["system"]) for r in records if r["rank"]})
        assert {s for _, s in ranked} == {"transformer_abs", "transformer_rel"}
        failed = [r for r in records if r["system"] == "transformer_alibi"]
        assert failed and "cannot write" in failed[0]["failure"] and "train.log" in failed[0]["failure"]
        assert all(r["parameters"] for r in records if r["rank"])
        for name in ("board.md", "board.csv", "board.tex", "bleu.png", "length_ratio.png"):
            assert (folder / name).stat().st_size > 0
    # progress lines per system, not fairseq's output
    assert re.search(r"\[transformer_rel-lr1e-2\] train 60/60 updates · dev loss [\d.]+", result.stdout)
    assert "| INFO |" not in result.stdout


def test_a_copied_demo_is_still_done_and_a_redone_step_keeps_the_users_files(quick_demo, tmp_path):
    """A copied (or moved) --out-dir is the same run: nothing is redone.  Changing an option
    redoes what it changes, replacing only the files those steps made: notes a user put in a
    model folder or a report folder, and a checkpoint of the user's beside the model's, stay
    (tests/engine/test_steps.py: the same for a folder a step writes as a whole)."""
    out, demo, result = quick_demo
    assert result.returncode == 0, "the quick demo failed (see the test above)"
    copy = tmp_path / "copied demo"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("lock"))
    command = [*demo[:demo.index("--out-dir")], "--out-dir", str(copy)]
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "start " not in again.stderr, again.stderr[-3000:]
    # the dry run is what would run: after an edit to the training text, every step after it
    train_src = copy / "data" / "text" / "train.src"
    original = train_src.read_bytes()
    train_src.write_bytes(original + b"w1 w2\n")
    planned = subprocess.run([*command, "--dry-run"], capture_output=True, text=True, timeout=300).stdout
    steps = re.findall(r"^\[(done|run \([^)]*\))\] (train|translate|report) ", planned, re.M)
    assert steps and all(state.startswith("run") for state, _ in steps), planned[-3000:]
    train_src.write_bytes(original)
    notes = [copy / "transformer_abs" / "NOTES.txt", copy / "report" / "test" / "NOTES.txt"]
    for note in notes:
        note.write_text("mine\n")
    before = (copy / "transformer_abs" / "checkpoint_best.pt").read_bytes()
    (copy / "transformer_abs" / "checkpoint_mine.pt").write_bytes(b"a user's checkpoint")
    notes.append(copy / "transformer_abs" / "checkpoint_mine.pt")
    contents = {note: note.read_bytes() for note in notes}
    changed = [*command[:command.index("--updates") + 1], "61", *command[command.index("--updates") + 2:],
               "--systems", "transformer_abs,transformer_rel"]
    redone = subprocess.run(changed, capture_output=True, text=True, timeout=600)
    assert redone.returncode == 0, redone.stderr[-3000:]
    assert "start train transformer_abs (done before with another command)" in redone.stderr
    assert (copy / "transformer_abs" / "checkpoint_best.pt").read_bytes() != before
    assert all(note.read_bytes() == contents[note] for note in notes)
