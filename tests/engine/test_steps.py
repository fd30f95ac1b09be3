"""The recipes' step engine as a library (relpos_recipes.engine), in-process and fast: when a
step is done, what makes it run again and what runs after it, temporary outputs, a failed
step, concurrency, moved folders, folder inputs and what a redone step replaces."""
import dataclasses
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from relpos_recipes.engine import Console, Graph, Job, Out, OutDir, Policy, Step, StepError, manifest
from relpos_recipes.engine.local import LocalRunner
from relpos_recipes.engine.plan import plan
from relpos_recipes.engine.step import Resources

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


def graph(steps, keep_going=False):
    return Graph([Job("steps", steps)], roots=[], keep_going=keep_going)


def run(steps, keep_going=False, threads=1):
    return LocalRunner(threads=threads, console=Console(stream_steps=False)).run(graph(steps, keep_going))


def states(steps):
    planned = plan(graph(steps))
    return [(step, planned.states[step]) for step in planned.steps]


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
    record = manifest.of(steps[1])
    assert record.status == "done" and record.step == "first" and record.version == manifest.VERSION
    assert record.command[0] == "{python}" and record.command[-2:] == ["{root}/b.txt", "{root}/runs.first"]
    assert list(record.inputs) == ["{root}/a.txt"]
    size, _mtime, digest = record.inputs["{root}/a.txt"][""]
    assert size == 2 and len(digest) == 64
    assert list(record.outputs) == ["{root}/b.txt"] and record.outputs["{root}/b.txt"][""][0] == 2
    assert record.host and record.started and record.ended and record.job_id is None
    outcome = run(steps)
    assert not outcome.ran and len(outcome.skipped) == 2
    assert runs(home, "first") == runs(home, "second") == 1


def test_a_changed_input_redoes_the_step_and_everything_downstream(chain):
    home, steps = chain
    run(steps)
    (home / "a.txt").write_text("z\n")
    assert [state.reason for _, state in states(steps)] == [f"{home / 'a.txt'} changed", "first runs first"]
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
    assert states(steps)[0][1].reason == f"{home / 'b.txt'} is missing"
    outcome = run(steps)
    assert [s.name for s in outcome.ran] == ["first"]  # b.txt came out the same: c.txt stands
    assert runs(home, "second") == 1


def test_an_output_changed_since_its_step_wrote_it_redoes_the_step(chain):
    """A cut-short output (a truncated hyp.txt) is not taken as the step's work: the step
    runs again, and what reads it only if it came out different."""
    home, steps = chain
    run(steps)
    (home / "b.txt").write_text("A")
    assert states(steps)[0][1].reason == f"{home / 'b.txt'} is not what the step wrote"
    assert [s.name for s in run(steps).ran] == ["first"] and (home / "b.txt").read_text() == "A\n"
    os.utime(home / "b.txt", (1, 1))  # touched, the same content: nothing to do
    assert not run(steps).ran


def test_a_changed_command_redoes_the_step_or_is_refused_before_any_work(chain):
    home, steps = chain
    run(steps)
    first = steps[1]
    changed = dataclasses.replace(first, command=[first.command[0], "-X", "utf8", *first.command[1:]])
    assert states([changed, steps[0]])[0][1].reason == "done before with another command"
    refusing = dataclasses.replace(changed, policy=Policy(on_change="refuse"))
    with pytest.raises(StepError, match="holds the work of another command"):
        run([refusing, steps[0]])
    assert runs(home, "first") == 1
    (home / "b.txt").unlink()  # nothing of the other command is left: nothing to protect
    assert [s.name for s in run([refusing, steps[0]]).ran] == ["first"]


def in_place_training(home, data, state, **policy):
    """A step that appends the data to its state, as a training adds updates to a checkpoint."""
    code = ("import sys, pathlib; data, state = map(pathlib.Path, sys.argv[1:]);"
            "state.write_text((state.read_text() if state.exists() else '') + data.read_text())")
    return Step("train", [PY, "-c", code, data, state], home=home, inputs=[data], in_place_outputs=[state],
                policy=Policy(owns=(r"state\.txt", r"state\.\d+\.txt"), **policy))


def test_an_in_place_step_whose_input_changed_starts_afresh_or_is_refused(tmp_path):
    """A training goes on from its own checkpoints, but only on the inputs it ran on: after
    its input changed it starts afresh (its own files removed first, by name: a user's file
    beside them stays), or, where its work is worth keeping, is refused naming the input."""
    data, state = tmp_path / "data.txt", tmp_path / "state.txt"
    data.write_text("one\n")
    run([in_place_training(tmp_path, data, state)])
    (tmp_path / "state.7.txt").write_text("an intermediate state of the step")
    (tmp_path / "state_mine.txt").write_text("a user's")
    data.write_text("two\n")
    refusing = in_place_training(tmp_path, data, state, on_change="refuse", keeps_state=state.exists)
    with pytest.raises(StepError, match=f"holds the work of another command .*{data.name} is not what it ran on"):
        run([refusing])
    assert states([in_place_training(tmp_path, data, state)])[0][1].reason == f"{data} changed"
    run([in_place_training(tmp_path, data, state)])
    assert state.read_text() == "two\n"  # not "one\ntwo\n": nothing of the old input went on
    assert not (tmp_path / "state.7.txt").exists() and (tmp_path / "state_mine.txt").read_text() == "a user's"


def test_an_in_place_output_no_run_made_is_never_taken_for_the_steps_work(tmp_path):
    """A checkpoint another tool left in the folder (no manifest of the step) is refused by
    name before any work, never resumed from or taken as a finished training."""
    data, state = tmp_path / "data.txt", tmp_path / "state.txt"
    data.write_text("one\n")
    state.write_text("someone else's\n")
    with pytest.raises(StepError, match=rf"{tmp_path} holds state\.txt that no run of this recipe made"):
        run([in_place_training(tmp_path, data, state)])
    assert state.read_text() == "someone else's\n"


@pytest.mark.parametrize("output", ["hyp.txt", "data-bin"])
def test_an_output_no_run_made_is_refused_by_name_and_left_as_it_was(tmp_path, output):
    """A file or a folder of files where a step would write, with no manifest of the step (a
    user's translation in the folder given as --out-dir), stops the run before any work, as
    a training's checkpoints do: it is never overwritten."""
    (tmp_path / "a.txt").write_text("a\n")
    mine = tmp_path / output / "notes.txt" if output == "data-bin" else tmp_path / output
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("mine\n")
    step = copy_step(tmp_path, tmp_path / "a.txt", tmp_path / output, "translate")
    with pytest.raises(StepError, match=rf"{tmp_path} holds {output} that no run of this recipe made "
                                        r"\(no \.steps/translate\.json"):
        run([step])
    assert mine.read_text() == "mine\n" and runs(tmp_path, "translate") == 0
    shutil.move(tmp_path / output, tmp_path / "moved away")
    assert run([step]).ran == [step]

def test_a_failed_step_leaves_no_output_and_is_tried_again(tmp_path):
    fail = tmp_path / "fail"
    fail.write_text("")
    # a tool writing through a temporary file of its own beside its output, as wmt_sources.py does
    code = ("import sys, pathlib; out = pathlib.Path(sys.argv[1]); out.write_text('partial');"
            "pathlib.Path(f'{out}.tmp.99').write_text('half');"
            "sys.exit('error: it failed' if pathlib.Path(sys.argv[2]).exists() else 0)")
    step = Step("flaky", [PY, "-c", code, Out(tmp_path / "out.txt"), fail], home=tmp_path)
    with pytest.raises(StepError, match="flaky failed .exit 1.: error: it failed"):
        run([step])
    assert not (tmp_path / "out.txt").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp.")]
    assert manifest.of(step).status == "failed"
    fail.unlink()
    assert states([step])[0][1].reason.startswith("failed before: flaky failed")
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


def test_a_redone_folder_output_replaces_only_the_files_its_step_made(tmp_path):
    """A folder a step writes as a whole (binarized data, dictionaries): when the step runs
    again with other options, its own files of the last run go, a user's notes stay, and the
    notes make no change for the steps that read the folder."""
    code = ("import sys, pathlib; d = pathlib.Path(sys.argv[1]); d.mkdir();"
            "[(d / name).write_text(sys.argv[2]) for name in sys.argv[3:]]")
    data = tmp_path / "data-bin"
    first = Step("bin", [PY, "-c", code, Out(data), "1", "a.bin", "old.bin"], home=tmp_path)
    reader = copy_step(tmp_path, data / "a.bin", tmp_path / "read.txt", "read")
    reader = dataclasses.replace(reader, inputs=[data])
    run([first, reader])
    (data / "NOTES.txt").write_text("mine")
    assert not run([first, reader]).ran  # a note is no part of the data
    second = dataclasses.replace(first, command=[PY, "-c", code, Out(data), "2", "a.bin"])
    run([second, reader])
    assert sorted(p.name for p in data.iterdir()) == ["NOTES.txt", "a.bin"]
    assert (data / "NOTES.txt").read_text() == "mine" and (tmp_path / "read.txt").read_text() == "2"


def test_steps_run_side_by_side_up_to_the_threads(tmp_path):
    code = ("import sys, time, pathlib; start = time.time(); time.sleep(0.6);"
            "pathlib.Path(sys.argv[1]).write_text(f'{start} {time.time()}')")
    steps = [Step(f"s{k}", [PY, "-c", code, Out(tmp_path / f"t{k}")], home=tmp_path) for k in range(3)]

    def spans():
        return sorted(tuple(map(float, (tmp_path / f"t{k}").read_text().split())) for k in range(3))

    run(steps, threads=3)
    starts, ends = zip(*spans())
    assert max(starts) < min(ends)  # all three at once
    for k in range(3):  # undone: what no run made is never overwritten, so the outputs go too
        steps[k].manifest_path.unlink()
        (tmp_path / f"t{k}").unlink()
    run(steps, threads=1)
    ordered = spans()
    assert all(ordered[k][1] <= ordered[k + 1][0] for k in range(2))  # one after another


def test_gpu_steps_share_each_gpu_up_to_jobs_per_gpu(tmp_path, monkeypatch):
    """Pretend GPUs: the runner only hands out CUDA_VISIBLE_DEVICES, so none need exist."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")  # the runner's GPUs are these two
    code = ("import os, sys, time, pathlib; start = time.time(); time.sleep(0.8);"
            "pathlib.Path(sys.argv[1]).write_text(f'{os.environ[\"CUDA_VISIBLE_DEVICES\"]} {start} {time.time()}')")
    steps = [Step(f"g{k}", [PY, "-c", code, Out(tmp_path / f"g{k}")], home=tmp_path, resources=Resources(gpus=1))
             for k in range(6)]

    def concurrency():
        """Per GPU, the most steps it ran at one time, and how many ran at once on all."""
        spans = [(tmp_path / f"g{k}").read_text().split() for k in range(6)]
        at_once = {gpu: max(sum(float(s) <= float(start) < float(e) for g, s, e in spans if g == gpu)
                            for g, start, _ in spans if g == gpu) for gpu, _, _ in spans}
        overall = max(sum(float(s) <= float(start) < float(e) for _, s, e in spans) for _, start, _ in spans)
        return at_once, overall

    LocalRunner(threads=6, gpus=2, console=Console(stream_steps=False), jobs_per_gpu=2).run(graph(steps))
    assert concurrency() == ({"5": 2, "7": 2}, 4)  # two on each GPU, the cores would allow six
    for k, step in enumerate(steps):  # run again: a step without its manifest nor its output
        step.manifest_path.unlink()
        (tmp_path / f"g{k}").unlink()
    LocalRunner(threads=6, gpus=2, console=Console(stream_steps=False)).run(graph(steps))
    assert concurrency() == ({"5": 3, "7": 3}, 6)  # without a cap: as many as the cores allow, shared out
    with pytest.raises(StepError, match="--jobs-per-gpu: expected at least 1, got 0"):
        LocalRunner(threads=2, gpus=1, jobs_per_gpu=0)


def test_a_moved_or_copied_folder_is_still_done(chain):
    home, steps = chain
    run(steps)
    copy = home.parent / "elsewhere"
    shutil.copytree(home, copy)  # new mtimes: inputs are hashed again and found the same
    moved = [copy_step(copy, copy / "b.txt", copy / "c.txt", "second"),
             copy_step(copy, copy / "a.txt", copy / "b.txt", "first")]
    assert all(state.done for _, state in states(moved))
    assert not run(moved).ran


def test_a_folder_reached_through_a_symbolic_link_is_the_same_run(chain):
    home, steps = chain
    run(steps)
    link = home.parent / "link"
    link.symlink_to(home)
    through = [copy_step(link, link / "b.txt", link / "c.txt", "second"),
               copy_step(link, link / "a.txt", link / "b.txt", "first")]
    assert all(state.done for _, state in states(through))


def test_the_dry_run_lists_every_step_its_command_and_whether_it_is_done(chain):
    home, steps = chain
    run(steps[1:])
    text = plan(graph(steps)).describe()
    assert text.splitlines()[0] == "[done] first"
    assert "[run (not run before)] second" in text and f"{home / 'c.txt'}" in text


def test_graph_errors(tmp_path):
    a = Step("a", ["true", Out(tmp_path / "x")], home=tmp_path, inputs=[tmp_path / "y"])
    b = Step("b", ["true", Out(tmp_path / "y")], home=tmp_path, inputs=[tmp_path / "x"])
    with pytest.raises(ValueError, match="cycle"):
        states([a, b])
    c = Step("c", ["true", Out(tmp_path / "x")], home=tmp_path)
    with pytest.raises(ValueError, match="output of both 'a' and 'c'"):
        states([a, c])


def test_the_scheduler_job_id_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    step = Step("s", ["true"], home=tmp_path)
    run([step])
    assert manifest.of(step).job_id == "4242"


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
                  home=tmp_path, inputs=[tmp_path / "good.txt", tmp_path / "bad.txt"],
                  policy=Policy(after_failures=True))
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
    with pytest.raises(StepError):
        run([dataclasses.replace(step, command=[PY, "-c", code, OutDir(board), "second", tmp_path / "fail"])])
    assert sorted(p.name for p in board.iterdir()) == ["NOTES.txt"]


@pytest.mark.parametrize("damage, why", [
    (lambda path: path.write_text("{not json"), "Expecting property name"),
    (lambda path: path.write_text('{"version": 2, "step": "s", "status": "done"'), "Expecting"),
    (lambda path: path.write_text('{"version": 2, "step": "s", "status": "done", "command": [], "identity": []}'),
     "no 'root'"),
    (lambda path: path.write_text('{"version": 2, "step": "s", "status": "done", "command": [], "identity": [], '
                                  '"root": ".", "inputs": [], "outputs": {}}'), "of another type"),
    (lambda path: path.write_text('{"version": 7}'), "another version of fairseq-relpos"),
    (lambda path: path.mkdir(), "Is a directory"),
    (lambda path: path.symlink_to(path), "Too many levels of symbolic links"),
])
def test_a_damaged_manifest_is_refused_by_name_before_any_work(tmp_path, damage, why):
    (tmp_path / "a.txt").write_text("a")
    step = copy_step(tmp_path, tmp_path / "a.txt", tmp_path / "b.txt", "s")
    step.manifest_path.parent.mkdir(parents=True)
    damage(step.manifest_path)
    with pytest.raises(StepError, match=rf"{step.manifest_path} is not a readable step manifest \(.*{why}.*\); "
                                        "delete it to run the step again"):
        run([step])
    assert not (tmp_path / "b.txt").exists()


def test_a_first_engine_manifest_is_read_with_its_tools_named_as_now(tmp_path):
    """The first engine recorded its tools by path (scripts/lib/X.py) or as recipes.tools
    subcommands, its outputs as a list: such a manifest still says the step is done."""
    from relpos_recipes.engine import Tool

    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    step = Step("filter", [Tool("filter-pairs", (PY, "-m", "relpos_recipes.tools.filter_pairs")), "--src",
                           tmp_path / "a.txt", "--out-src", Out(tmp_path / "b.txt")], home=tmp_path,
                inputs=[tmp_path / "a.txt"])
    old = {"version": 1, "step": "filter", "status": "done",
           "command": ["{python}", "{repo}/scripts/lib/filter_pairs.py", "--src", "{root}/a.txt", "--out-src",
                       "{root}/b.txt"],
           "identity": ["{python}", "{repo}/scripts/lib/filter_pairs.py", "--src", "{root}/a.txt", "--out-src",
                        "{root}/b.txt"],
           "root": ".", "inputs": {"{root}/a.txt": manifest.fingerprint(tmp_path / "a.txt")},
           "outputs": ["{root}/b.txt"], "host": "h", "pid": 1, "job_id": None}
    step.manifest_path.parent.mkdir()
    step.manifest_path.write_text(__import__("json").dumps(old))
    assert step.recorded_identity()[0] == "{tool:filter-pairs}"
    assert states([step])[0][1].done
    text = step.recorded_command()
    old["command"] = ["{python}", "-m", "recipes.tools", "textproc", *text[1:]]
    assert manifest._record(old).command == ["{tool:textproc}", *text[1:]]


def test_a_full_disk_is_named_and_leaves_no_temporary_manifest(tmp_path, monkeypatch):
    step = Step("s", ["true"], home=tmp_path)

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(StepError, match=rf"no space left on the device of {tmp_path / '.steps'} \(writing s\.json\)"):
        manifest.write(step.manifest_path, manifest.Record.start(step, {}))
    monkeypatch.undo()
    assert [p.name for p in (tmp_path / ".steps").iterdir()] == []
