"""The step engine as processes: a killed or interrupted engine leaves no process of its steps
and no finished-looking output; one run at a time per step and per folder, nested folders
included; a full disk and a read-only folder are named; a graph's later part is built where
what it reads is final (locally, after its step ran; in a dry run, not before)."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from relpos_recipes.engine import (Console, FolderLock, Graph, Job, Later, Out, Policy, Step, StepError, manifest)
from relpos_recipes.engine.local import LocalRunner
from relpos_recipes.engine.plan import plan
from conftest import CTRL_C_DEFAULT, REPO_ROOT

PY = sys.executable
REPO = REPO_ROOT


def engine_script(tmp_path, body: str) -> Path:
    script = tmp_path / "engine.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from pathlib import Path
        from relpos_recipes.engine import Console, Graph, Job, Out, Step
        from relpos_recipes.engine.local import LocalRunner
        home = Path({str(tmp_path)!r})
    """) + textwrap.dedent(body))
    return script


def wait_for(path: Path, seconds: float = 20):
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.05)
    return path.read_text()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has ended
        return f.read().split()[2] != "Z"


def test_a_killed_engine_takes_every_process_of_its_steps_with_it(tmp_path):
    """SIGKILL to the engine: its step's tool and the tool's own child (fairseq-train under
    the train wrapper) die with it, nothing is under a final name, and the next run does the
    step again."""
    script = engine_script(tmp_path, """
        tool = ("import os, subprocess, sys, pathlib; pathlib.Path(sys.argv[1]).write_text('half');"
                "child = subprocess.Popen([sys.executable, '-c', 'import os, time, pathlib, sys;"
                "pathlib.Path(sys.argv[1]).write_text(str(os.getpid())); time.sleep(0 if pathlib.Path(sys.argv[2]).exists() else 60)',"
                " sys.argv[2], sys.argv[3]]); sys.exit(child.wait())")
        step = Step("slow", [sys.executable, "-c", tool, Out(home / "out.txt"), home / "grandchild", home / "quick"],
                    home=home)
        LocalRunner(console=Console(stream_steps=False)).run(Graph([Job("j", [step])], roots=[]))
    """)
    engine = subprocess.Popen([PY, str(script)], stderr=subprocess.DEVNULL)
    grandchild = int(wait_for(tmp_path / "grandchild"))
    engine.send_signal(signal.SIGKILL)
    engine.wait()
    deadline = time.monotonic() + 15
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)
    assert not (tmp_path / "out.txt").exists()
    assert json.loads((tmp_path / ".steps" / "slow.json").read_text())["status"] == "running"
    (tmp_path / "grandchild").unlink()
    (tmp_path / "quick").write_text("yes")
    again = subprocess.run([PY, str(script)], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "out.txt").read_text() == "half"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp.")]


def test_an_interrupted_run_stops_its_steps_and_says_so_on_the_next_run(tmp_path):
    """Ctrl-C (SIGINT) to the engine: it stops its running step, which is interrupted, not
    failed; the next run says so and does the step again."""
    script = engine_script(tmp_path, """
        code = ("import sys, time, pathlib; pathlib.Path(sys.argv[2]).write_text('started');"
                "time.sleep(0 if pathlib.Path(sys.argv[3]).exists() else 60); pathlib.Path(sys.argv[1]).write_text('x')")
        step = Step("slow", [sys.executable, "-c", code, Out(home / "out.txt"), home / "started", home / "quick"],
                    home=home)
        LocalRunner(console=Console()).run(Graph([Job("j", [step])], roots=[]))
    """)
    engine = subprocess.Popen([*CTRL_C_DEFAULT, PY, str(script)], stderr=subprocess.PIPE, text=True)
    wait_for(tmp_path / "started")
    engine.send_signal(signal.SIGINT)
    assert engine.wait(timeout=30) != 0
    record = json.loads((tmp_path / ".steps" / "slow.json").read_text())
    assert record["status"] == "running" and not (tmp_path / "out.txt").exists()
    (tmp_path / "quick").write_text("")
    again = subprocess.run([PY, str(script)], check=True, capture_output=True, text=True)
    assert "start slow (interrupted before)" in again.stderr, again.stderr
    assert (tmp_path / "out.txt").read_text() == "x"


def test_a_step_whose_process_still_runs_is_not_run_twice(tmp_path):
    """An orphan of a killed engine (or another run) holds the step's lock while it lives:
    a re-run refuses the step by name before any work, and runs it once the orphan is gone."""
    step = Step("train", [PY, "-c", "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('done')",
                          Out(tmp_path / "model")], home=tmp_path)
    (tmp_path / ".steps").mkdir()
    manifest.write(step.manifest_path, manifest.Record.start(step, {}))
    holder = subprocess.Popen([PY, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); f.write('pid 99 on h');"
                                     "f.flush(); fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
                               str(tmp_path / ".steps" / "train.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StepError, match=rf"train is still running in {tmp_path} \(pid 99 on h\)"):
            LocalRunner(console=Console(stream_steps=False)).run(Graph([Job("j", [step])], roots=[]))
        assert not (tmp_path / "model").exists()
    finally:
        holder.kill()
        holder.wait()
    LocalRunner(console=Console(stream_steps=False)).run(Graph([Job("j", [step])], roots=[]))
    assert (tmp_path / "model").read_text() == "done"


def test_a_second_run_on_a_locked_folder_is_refused_by_name(tmp_path):
    with FolderLock([tmp_path], "bash scripts/demo.sh"):
        with pytest.raises(StepError, match=rf"{tmp_path} is in use by another run \(pid {os.getpid()} .*demo.sh"):
            with FolderLock([tmp_path], "another"):
                pass
    with FolderLock([tmp_path], "again"):
        pass


def test_a_folder_inside_a_locked_folder_is_locked_too_and_the_other_way_round(tmp_path):
    """train.sh --save-dir OUT/transformer_abs while a demo runs on OUT is refused, and so is
    a demo on OUT while train.sh runs inside it; SLURM jobs of one recipe share their folder."""
    inner = tmp_path / "transformer_abs"
    with FolderLock([tmp_path], "bash scripts/demo.sh"):
        with pytest.raises(StepError, match=rf"{inner} is inside {tmp_path}, which is in use by another run "
                                            r"\(pid \d+ .*demo\.sh\)"):
            with FolderLock([inner], "bash scripts/train.sh"):
                pass
    with FolderLock([inner], "bash scripts/train.sh"):
        with pytest.raises(StepError, match=f"{tmp_path} is in use by another run"):
            with FolderLock([tmp_path], "bash scripts/demo.sh"):
                pass
    with FolderLock([tmp_path], "job 1", shared=True), FolderLock([tmp_path], "job 2", shared=True):
        pass


def test_a_lock_file_that_is_a_folder_or_a_file_given_as_folder_is_named(tmp_path):
    (tmp_path / ".steps" / "lock").mkdir(parents=True)
    with pytest.raises(StepError, match=rf"{tmp_path / '.steps' / 'lock'} is a folder, not the run's lock file"):
        with FolderLock([tmp_path], "x"):
            pass
    (tmp_path / "file").write_text("")
    with pytest.raises(StepError, match=rf"{tmp_path / 'file'} is a file, not a folder"):
        with FolderLock([tmp_path / "file"], "x"):
            pass


@contextmanager
def small_file_system(path: Path, size: str = "64k", read_only: bool = False):
    """A tmpfs mounted at PATH (root only; skipped where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_full_disk_fails_the_step_by_name_and_stops_its_process(tmp_path):
    with small_file_system(tmp_path / "small") as small:
        code = "import sys; open(sys.argv[1], 'w').write('x' * 1_000_000)"
        step = Step("big", [PY, "-c", code, Out(small / "big.txt")], home=small)
        # the step fails, and so does the record of its failure: the message names the device
        with pytest.raises(StepError, match=f"no space left on the device of {small}"):
            LocalRunner(console=Console(stream_steps=False)).run(Graph([Job("j", [step])], roots=[]))
        assert not [p for p in small.rglob(".tmp.*")]


def test_a_read_only_folder_is_named_and_a_run_with_nothing_to_do_succeeds_there(tmp_path):
    from relpos_recipes.engine import Launch, run

    with small_file_system(tmp_path / "ro", "1m") as folder:
        (folder / "a.txt").write_text("a")
        step = Step("copy", ["cp", folder / "a.txt", Out(folder / "b.txt")], home=folder, inputs=[folder / "a.txt"])
        other = Step("other", ["cp", folder / "a.txt", Out(folder / "c.txt")], home=folder, inputs=[folder / "a.txt"])
        quiet = Launch("test", [], console=Console(stream_steps=False))
        run(Graph([Job("j", [step])], roots=[folder]), quiet)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        run(Graph([Job("j", [step])], roots=[folder]), quiet)  # done: nothing to write
        with pytest.raises(StepError, match=rf"{folder / '.steps'} is read-only"):
            run(Graph([Job("j", [step, other])], roots=[folder]), quiet)


def choose_then_build(tmp_path):
    """A choice step writes a rate; the job's later part trains 'seeds' at it, as the
    leaderboard does."""
    rate = tmp_path / "rate.txt"
    choose = Step("choose", [PY, "-c", "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text('3e-3')", Out(rate)],
                  home=tmp_path)

    def seeds():
        chosen = rate.read_text()
        return [Step(f"seed{k}", [PY, "-c", "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])",
                                  Out(tmp_path / f"model-{chosen}-seed{k}"), chosen],
                     home=tmp_path, inputs=[rate]) for k in (2, 3)]

    return Graph([Job("scheme", [choose], later=Later(seeds, "the seeds at the chosen rate"))], roots=[tmp_path])


def test_a_later_part_is_built_from_what_its_step_wrote(tmp_path):
    graph = choose_then_build(tmp_path)
    planned = plan(graph)
    assert [s.name for s in planned.steps] == ["choose"] and planned.unbuilt == graph.jobs
    assert "[later] the seeds at the chosen rate (planned when scheme have run)" in planned.describe()
    outcome = LocalRunner(console=Console(stream_steps=False)).run(graph)
    assert [s.name for s in outcome.ran] == ["choose", "seed2", "seed3"]
    assert (tmp_path / "model-3e-3-seed2").read_text() == "3e-3"
    planned = plan(choose_then_build(tmp_path))  # now what it reads is final: built, done
    assert not planned.unbuilt and all(state.done for state in planned.states.values())
    assert len(planned.steps) == 3


def test_a_later_part_of_a_failed_job_is_not_built_and_says_why(tmp_path):
    bad = Step("choose", [PY, "-c", "raise SystemExit('error: nothing finished')", Out(tmp_path / "rate.txt")],
               home=tmp_path)
    graph = Graph([Job("scheme", [bad], later=Later(lambda: pytest.fail("built"), "the seeds"))], roots=[tmp_path],
                  keep_going=True)
    outcome = LocalRunner(console=Console(stream_steps=False)).run(graph)
    assert list(outcome.failed) == [bad] and outcome.blocked_jobs == {graph.jobs[0]: bad}


def test_a_policy_refuses_an_unknown_change_rule():
    with pytest.raises(ValueError, match="on_change: redo, refuse or go_on"):
        Policy(on_change="ignore")


def test_every_manifest_under_the_run_is_read_before_any_work(tmp_path):
    """A damaged manifest of a step that would run only after hours of training (a report's)
    stops the run at its start, naming it."""
    from relpos_recipes.engine import Launch, run

    damaged = tmp_path / "report" / ".steps" / "report.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"version": 2, "step": "report"')
    (tmp_path / "a.txt").write_text("a")
    first = Step("copy", ["cp", tmp_path / "a.txt", Out(tmp_path / "b.txt")], home=tmp_path, inputs=[tmp_path / "a.txt"])
    with pytest.raises(StepError, match=rf"{damaged} is not a readable step manifest"):
        run(Graph([Job("j", [first])], roots=[tmp_path]), Launch("test", [], console=Console(stream_steps=False)))
    assert not (tmp_path / "b.txt").exists()
