"""The recipes' step engine as a library (recipes/engine.py), in-process and fast: when a step
is done, what makes it run again and what runs after it, temporary outputs, a killed step,
a failed one, concurrency, moved folders, locks and older versions' markers."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from relpos_recipes.engine import (Console, FolderLock, LocalExecutor, Out, OutDir, Step, StepError,
                            describe, plan, read_manifest)

PY = sys.executable


def copy_step(home, source, target, name="copy", **kwargs):
    """A step that copies SOURCE to TARGET (upper-cased), counting its runs in HOME/runs."""
    code = textwrap.dedent("""
        import sys
        from pathlib import Path
        source, target, runs = map(Path, sys.argv[1:])
        runs.write_text(runs.read_text() + "x" if runs.exists() else "x")
        target.write_text(source.read_text().upper())
        print("copied", source.name)
    """)
    return Step(name, [PY, "-c", code, source, Out(target), home / f"runs.{name}"], home=home,
                inputs=[source], **kwargs)


def runs(home, name="copy"):
    path = home / f"runs.{name}"
    return len(path.read_text()) if path.exists() else 0


def run(steps, **kwargs):
    return LocalExecutor(threads=kwargs.pop("threads", 1), console=Console(stream_steps=False)).run(steps, **kwargs)


@pytest.fixture
def chain(tmp_path):
    """a.txt -> first (b.txt) -> second (c.txt)"""
    (tmp_path / "a.txt").write_text("a\n")
    first = copy_step(tmp_path, tmp_path / "a.txt", tmp_path / "b.txt", "first")
    second = copy_step(tmp_path, tmp_path / "b.txt", tmp_path / "c.txt", "second")
    return tmp_path, [second, first]  # any order: the paths say which runs first


def test_a_step_runs_once_and_its_manifest_says_what_ran(chain):
    home, steps = chain
    outcome = run(steps)
    assert [s.name for s in outcome.ran] == ["first", "second"]
    assert (home / "c.txt").read_text() == "A\n"
    record = read_manifest(steps[1])
    assert record["status"] == "done" and record["step"] == "first"
    assert record["command"][0] == "{python}" and record["command"][-2:] == ["{root}/b.txt", "{root}/runs.first"]
    assert list(record["inputs"]) == ["{root}/a.txt"]
    size, _mtime, digest = record["inputs"]["{root}/a.txt"][""]
    assert size == 2 and len(digest) == 64
    assert record["outputs"] == ["{root}/b.txt"] and record["host"] and record["started"] and record["ended"]
    assert record["job_id"] is None
    outcome = run(steps)
    assert not outcome.ran and len(outcome.skipped) == 2
    assert runs(home, "first") == runs(home, "second") == 1


def test_a_changed_input_redoes_the_step_and_everything_downstream(chain):
    home, steps = chain
    run(steps)
    (home / "a.txt").write_text("z\n")
    assert [state.reason for _, state in plan(steps)] == [f"{home / 'a.txt'} changed", "first runs first"]
    outcome = run(steps)
    assert [s.name for s in outcome.ran] == ["first", "second"] and (home / "c.txt").read_text() == "Z\n"


def test_a_touched_or_copied_input_with_the_same_content_is_not_a_change(chain):
    home, steps = chain
    run(steps)
    os.utime(home / "a.txt", (1, 1))
    assert not run(steps).ran


def test_a_deleted_output_is_redone_and_the_steps_after_it_only_if_it_came_out_different(chain):
    home, steps = chain
    run(steps)
    (home / "b.txt").unlink()
    assert plan(steps)[0][1].reason == f"{home / 'b.txt'} is missing"
    outcome = run(steps)
    assert [s.name for s in outcome.ran] == ["first"]  # b.txt came out the same: c.txt stands
    assert runs(home, "second") == 1


def test_a_changed_command_redoes_the_step_or_is_refused_before_any_work(chain):
    home, steps = chain
    run(steps)
    changed = copy_step(home, home / "a.txt", home / "b.txt", "first")
    changed.command = [*changed.command[:1], "-X", "utf8", *changed.command[1:]]
    assert plan([changed, steps[0]])[0][1].reason == "done before with another command"
    refusing = copy_step(home, home / "a.txt", home / "b.txt", "first", on_change="refuse")
    refusing.command = changed.command
    with pytest.raises(StepError, match="holds the work of another command"):
        run([refusing, steps[0]])
    assert runs(home, "first") == 1
    (home / "b.txt").unlink()  # nothing of the other command is left: nothing to protect
    assert [s.name for s in run([refusing, steps[0]]).ran] == ["first"]



def test_an_in_place_step_whose_input_changed_starts_afresh_or_is_refused(tmp_path):
    """A training goes on from its own checkpoints, but only on the inputs it ran on: after
    its input changed it starts afresh (its own files removed first), or, where its work is
    worth keeping, is refused naming the input."""
    data, state = tmp_path / "data.txt", tmp_path / "state.txt"
    data.write_text("one\n")
    # appends the data to its state, as a training adds updates to its checkpoint
    code = ("import sys, pathlib; data, state = map(pathlib.Path, sys.argv[1:]);"
            "state.write_text((state.read_text() if state.exists() else '') + data.read_text())")

    def train(**kwargs):
        return Step("train", [PY, "-c", code, data, state], home=tmp_path, inputs=[data],
                    in_place_outputs=[state], owns=["state.txt"], **kwargs)

    run([train()])
    data.write_text("two\n")
    refusing = train(on_change="refuse", keeps_state=state.exists)
    with pytest.raises(StepError, match=f"holds the work of another command .*{data.name} is not what it ran on"):
        run([refusing])
    assert plan([train()])[0][1].reason == f"{data} changed"
    run([train()])
    assert state.read_text() == "two\n"  # not "one\ntwo\n": nothing of the old input went on

def test_a_failed_step_leaves_no_output_and_is_tried_again(tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("")
    # a tool writing through a temporary file of its own beside its output, as corpora.py does
    code = ("import sys, pathlib; out = pathlib.Path(sys.argv[1]); out.write_text('partial');"
            "pathlib.Path(f'{out}.tmp.99').write_text('half');"
            "sys.exit('error: it failed' if pathlib.Path(sys.argv[2]).exists() else 0)")
    step = Step("flaky", [PY, "-c", code, Out(tmp_path / "out.txt"), fail], home=tmp_path)
    with pytest.raises(StepError, match="flaky failed .exit 1.: error: it failed"):
        run([step])
    assert not (tmp_path / "out.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp.")]
    assert read_manifest(step)["status"] == "failed"
    fail.unlink()
    assert plan([step])[0][1].reason.startswith("failed before: flaky failed")
    assert run([step]).ran == [step] and (tmp_path / "out.txt").read_text() == "partial"


def test_keep_going_runs_the_other_steps_and_blocks_what_needs_the_failed_one(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    bad = Step("bad", [PY, "-c", "raise SystemExit('error: no')", Out(tmp_path / "bad.txt")], home=tmp_path)
    after_bad = copy_step(tmp_path, tmp_path / "bad.txt", tmp_path / "c.txt", "after")
    good = copy_step(tmp_path, tmp_path / "a.txt", tmp_path / "b.txt", "good")
    outcome = run([bad, after_bad, good], keep_going=True)
    assert outcome.ran == [good] and list(outcome.failed) == [bad]
    assert outcome.blocked == {after_bad: bad} and "error: no" in outcome.error_of(after_bad)


def test_out_dir_keeps_the_files_a_user_put_beside_the_outputs(tmp_path):
    report = tmp_path / "report"
    report.mkdir()
    (report / "NOTES.txt").write_text("mine")
    (report / "old.md").write_text("old")
    code = "import sys, pathlib; d = pathlib.Path(sys.argv[1]); (d / 'old.md').write_text('new')"
    step = Step("report", [PY, "-c", code, OutDir(report)], home=tmp_path)
    run([step])
    assert (report / "NOTES.txt").read_text() == "mine" and (report / "old.md").read_text() == "new"
    assert sorted(p.name for p in report.iterdir()) == ["NOTES.txt", "old.md"]


def test_steps_run_side_by_side_up_to_the_threads(tmp_path):
    code = ("import sys, time, pathlib; start = time.time(); time.sleep(0.6);"
            "pathlib.Path(sys.argv[1]).write_text(f'{start} {time.time()}')")
    steps = [Step(f"s{k}", [PY, "-c", code, Out(tmp_path / f"t{k}")], home=tmp_path) for k in range(3)]

    def spans():
        return sorted(tuple(map(float, (tmp_path / f"t{k}").read_text().split())) for k in range(3))

    run(steps, threads=3)
    starts, ends = zip(*spans())
    assert max(starts) < min(ends)  # all three at once
    for k in range(3):
        steps[k].manifest_path.unlink()
    run(steps, threads=1)
    ordered = spans()
    assert all(ordered[k][1] <= ordered[k + 1][0] for k in range(2))  # one after another


def test_a_moved_or_copied_folder_is_still_done(chain):
    home, steps = chain
    run(steps)
    copy = home.parent / "elsewhere"
    shutil.copytree(home, copy)  # new mtimes: inputs are hashed again and found the same
    moved = [copy_step(copy, copy / "b.txt", copy / "c.txt", "second"),
             copy_step(copy, copy / "a.txt", copy / "b.txt", "first")]
    assert all(state.done for _, state in plan(moved))
    assert not run(moved).ran


def test_the_dry_run_lists_every_step_its_command_and_whether_it_is_done(chain):
    home, steps = chain
    run(steps[1:])
    text = describe(plan(steps))
    assert text.splitlines()[0] == "[done] first"
    assert "[run (not run before)] second" in text and f"{home / 'c.txt'}" in text


def test_a_killed_run_leaves_no_finished_output_and_stops_its_steps(tmp_path):
    """SIGKILL to the engine: its running step's process dies with it (it cannot clean up),
    nothing is under a final name, and the next run does the step again."""
    script = tmp_path / "engine.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from pathlib import Path
        from relpos_recipes.engine import LocalExecutor, Out, Step
        home = Path({str(tmp_path)!r})
        code = ("import os, sys, time, pathlib; pathlib.Path(sys.argv[1]).write_text('half');"
                "pathlib.Path(sys.argv[2]).write_text(str(os.getpid()));"
                "time.sleep(0 if pathlib.Path(sys.argv[3]).exists() else 60)")
        step = Step("slow", [sys.executable, "-c", code, Out(home / "out.txt"), home / "pid",
                             home / "quick"], home=home)
        LocalExecutor().run([step])
    """))
    engine = subprocess.Popen([PY, str(script)], stderr=subprocess.DEVNULL)
    for _ in range(200):
        if (tmp_path / "pid").exists() and (tmp_path / "pid").read_text():
            break
        time.sleep(0.05)
    child = int((tmp_path / "pid").read_text())
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)
    assert not (tmp_path / "out.txt").exists()
    manifest = json.loads((tmp_path / ".steps" / "slow.json").read_text())
    assert manifest["status"] == "running"
    (tmp_path / "quick").write_text("")
    subprocess.run([PY, str(script)], check=True, capture_output=True)
    assert (tmp_path / "out.txt").read_text() == "half"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp.")]



def test_an_interrupted_run_stops_its_steps_and_says_so_on_the_next_run(tmp_path):
    """Ctrl-C (SIGINT) to the engine: it stops its running step, which is interrupted, not
    failed; the next run says so and does the step again."""
    script = tmp_path / "engine.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from pathlib import Path
        from relpos_recipes.engine import Console
        from relpos_recipes.engine import LocalExecutor, Out, Step
        home = Path({str(tmp_path)!r})
        code = ("import sys, time, pathlib; pathlib.Path(sys.argv[2]).write_text('started');"
                "time.sleep(0 if pathlib.Path(sys.argv[3]).exists() else 60); pathlib.Path(sys.argv[1]).write_text('x')")
        step = Step("slow", [sys.executable, "-c", code, Out(home / "out.txt"), home / "started", home / "quick"],
                    home=home)
        LocalExecutor(console=Console()).run([step])
    """))
    engine = subprocess.Popen([PY, str(script)], stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if (tmp_path / "started").exists():
            break
        time.sleep(0.05)
    engine.send_signal(signal.SIGINT)
    assert engine.wait(timeout=30) != 0
    manifest = json.loads((tmp_path / ".steps" / "slow.json").read_text())
    assert manifest["status"] == "running" and not (tmp_path / "out.txt").exists()
    (tmp_path / "quick").write_text("")
    again = subprocess.run([PY, str(script)], check=True, capture_output=True, text=True)
    assert "start slow (interrupted before)" in again.stderr, again.stderr
    assert (tmp_path / "out.txt").read_text() == "x"

def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
        return f.read().split()[2] != "Z"


def test_a_second_run_on_a_locked_folder_is_refused_by_name(tmp_path):
    with FolderLock([tmp_path], "bash scripts/demo.sh"):
        with pytest.raises(StepError, match=rf"{tmp_path} is in use by another run \(pid {os.getpid()} .*demo.sh"):
            with FolderLock([tmp_path], "another"):
                pass
    with FolderLock([tmp_path], "again"):
        pass


def test_graph_errors(tmp_path):
    a = Step("a", ["true", Out(tmp_path / "x")], home=tmp_path, inputs=[tmp_path / "y"])
    b = Step("b", ["true", Out(tmp_path / "y")], home=tmp_path, inputs=[tmp_path / "x"])
    with pytest.raises(ValueError, match="cycle"):
        plan([a, b])
    c = Step("c", ["true", Out(tmp_path / "x")], home=tmp_path)
    with pytest.raises(ValueError, match="output of both 'a' and 'c'"):
        plan([a, c])


def test_an_older_versions_marker_is_recognised_once(tmp_path):
    (tmp_path / "out.txt").write_text("made by an older version")
    step = Step("old", ["false", Out(tmp_path / "out.txt")], home=tmp_path,
                legacy_done=lambda: (tmp_path / "old.done").exists())
    (tmp_path / "old.done").write_text("")
    outcome = run([step])
    assert outcome.skipped == [step] and read_manifest(step)["status"] == "done"
    (tmp_path / "old.done").unlink()
    assert not run([step]).ran  # its manifest says so from now on


def test_the_scheduler_job_id_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    step = Step("s", ["true"], home=tmp_path)
    run([step])
    assert read_manifest(step)["job_id"] == "4242"


def test_a_folder_input_is_its_files_without_logs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.bin").write_text("x")
    (data / "preprocess.log").write_text("12:00 binarized")
    step = Step("use", ["true"], home=tmp_path, inputs=[data])
    run([step])
    (data / "preprocess.log").write_text("13:00 binarized again")
    assert not run([step]).ran
    (data / "train.bin").write_text("y")
    assert run([step]).ran == [step]


def test_a_step_after_failures_runs_on_what_the_others_made(tmp_path):
    (tmp_path / "a").write_text("a")
    good = copy_step(tmp_path, tmp_path / "a", tmp_path / "good.txt", "good")
    bad = Step("bad", [PY, "-c", "raise SystemExit('error: diverged')", Out(tmp_path / "bad.txt")], home=tmp_path)
    code = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(str([pathlib.Path(p).exists() for p in sys.argv[2:]]))"
    choose = Step("choose", [PY, "-c", code, Out(tmp_path / "choice"), tmp_path / "good.txt", tmp_path / "bad.txt"],
                  home=tmp_path, inputs=[tmp_path / "good.txt", tmp_path / "bad.txt"], after_failures=True)
    outcome = run([good, bad, choose], keep_going=True)
    assert choose in outcome.ran and (tmp_path / "choice").read_text() == "[True, False]"


def test_a_failed_rerun_leaves_no_stale_output_of_the_step_in_its_folder(tmp_path):
    """A board written last time is removed when its step runs again, so a failure leaves
    no old board that looks current; the user's files stay."""
    board = tmp_path / "board"
    (tmp_path / "fail").write_text("")
    code = ("import sys, pathlib; d = pathlib.Path(sys.argv[1]); (d / 'board.md').write_text(sys.argv[2]);"
            "sys.exit('error: failed' if pathlib.Path(sys.argv[3]).read_text() else 0)")
    step = Step("board", [PY, "-c", code, OutDir(board), "first", tmp_path / "fail"], home=tmp_path)
    run([step])
    (board / "NOTES.txt").write_text("mine")
    (tmp_path / "fail").write_text("yes")
    step.command = [PY, "-c", code, OutDir(board), "second", tmp_path / "fail"]
    with pytest.raises(StepError):
        run([step])
    assert sorted(p.name for p in board.iterdir()) == ["NOTES.txt"]
