"""The one runner on a real SLURM cluster (scripts/local-slurm.sh, as in tests/cluster/test_slurm.py):
the leaderboard's re-plan points as job boundaries, whole-graph planning at submission, and
what SLURM does wrong or refuses: a job waiting on a failed one, a submission sbatch refuses
half-way, GPUs the partition does not have, a training that keeps reaching its time limit; and
what the runner says of a job being requeued, Ctrl-C under --wait and a cancelled training.
(That the cluster's board equals the one made here, the same rates, updates and translations,
was checked by hand: docs/reproducing.md, "Running on a cluster".)"""
import json
import os
import re
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import CTRL_C_DEFAULT, REPO_ROOT, cluster_report, poll_slurm, run_command as run
from relpos_recipes.engine import Step, manifest, unfinished
from relpos_recipes.engine.slurm_queue import queue_states, time_left
from relpos_recipes.tools.choice import _grid_point

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("slurm")]

REPO = REPO_ROOT
SCRIPTS = REPO / "scripts"
# one scheme, two rates: after 50 updates 1e-2 reaches a lower dev loss than 1e-3 (6.8 against
# 4.3), so its choice is not the grid's first rate; two seeds.  (A scheme that fails, on the
# board beside another: the quick leaderboard in tests/recipes/test_demo.py; several schemes
# ranked: tests/analysis/test_leaderboard.py.)
BOARD = ["--quick", "--systems", "transformer_abs", "--lr-grid", "1e-3,1e-2", "--seeds", "2",
         "--train-limit", "20", "--updates", "50", "--validate-every", "25", "--patience", "2"]
ON_SLURM = ["--launcher", "slurm", "--slurm-gpus-per-job", "0"]


def submitted_ids(out: Path) -> list:
    record = out / "slurm" / "jobs.json"
    return list(json.loads(record.read_text()).values()) if record.exists() else []


def cancel_all(out: Path, slurm: str) -> None:
    ids = submitted_ids(out)
    if ids:
        subprocess.run(["scancel", *ids], capture_output=True, env={**os.environ, "SLURM_CONF": slurm})


@pytest.fixture(scope="module")
def boards(slurm, tmp_path_factory, request):
    """A one-scheme leaderboard on SLURM (--wait)."""
    root = tmp_path_factory.mktemp("boards")
    env = {"SLURM_CONF": slurm}
    request.addfinalizer(lambda: cancel_all(root / "cluster", slurm))
    cluster = run(["bash", SCRIPTS / "leaderboard.sh", *BOARD, "--out-dir", root / "cluster", *ON_SLURM, "--wait"],
                  env)
    return {"root": root, "cluster": cluster, "env": env}


def test_the_leaderboard_on_slurm_trains_each_schemes_seeds_at_its_chosen_rate(boards):
    root = boards["root"]
    tuning = json.loads((root / "cluster" / "leaderboard" / "tuning.json").read_text())["schemes"]
    chosen = {arch: tuning[arch]["chosen"] for arch in ("transformer_abs",)}
    assert list(chosen.values()) == ["1e-2"]  # the grid's second rate: no placeholder could pass for it
    models = root / "cluster" / "leaderboard" / "models"
    for arch, lr in chosen.items():
        assert (models / f"{arch}-lr{lr}-seed2" / "checkpoint_best.pt").exists()
        others = [p.name for p in models.glob(f"{arch}-lr*-seed2")]
        assert others == [f"{arch}-lr{lr}-seed2"], others
        log = (models / f"{arch}-lr{lr}-seed2" / "train.log").read_text()
        assert f"'lr': [{float(lr)}]" in log
    # the scheme's job waited for every rate of its grid, and the boards for the scheme
    submitted = boards["cluster"].stdout
    job_ids = dict((name, job) for job, name in re.findall(r"^\[submitted (\d+)\] (\S+)", submitted, re.M))
    line = next(l for l in submitted.splitlines() if re.match(r"\[submitted \d+\] transformer_abs ", l))
    assert job_ids["transformer_abs-lr1e-3"] in line and job_ids["transformer_abs-lr1e-2"] in line, line
    line = next(l for l in submitted.splitlines() if re.match(r"\[submitted \d+\] boards ", l))
    assert job_ids["transformer_abs"] in line, line
    assert "FAILED" not in boards["cluster"].stderr


def test_a_resubmission_plans_the_whole_graph(boards):
    """Nothing changed: nothing is submitted.  The data changed (another --seed of the corpus
    would change everything; here the dev pairs' limit stays and the corpus grows): every
    training, translation, choice and board downstream of the data is submitted again, not
    taken as done on the old data."""
    out = boards["root"] / "cluster"
    again = run(["bash", SCRIPTS / "leaderboard.sh", *BOARD, "--out-dir", out, *ON_SLURM], boards["env"])
    assert "[submitted" not in again.stdout and "[submit]" not in again.stdout
    assert again.stdout.count("[done]") == 5  # prepare, 2 grid points, the scheme, boards
    changed = [*BOARD[:BOARD.index("--train-limit")], "--train-limit", "21", *BOARD[BOARD.index("--train-limit") + 2:]]
    planned = run(["bash", SCRIPTS / "leaderboard.sh", *changed, "--out-dir", out, *ON_SLURM, "--dry-run"],
                  boards["env"]).stdout
    submit = re.findall(r"^\[submit\] (\S+)", planned, re.M)
    assert set(submit) == {"prepare", "boards", "transformer_abs", "transformer_abs-lr1e-3", "transformer_abs-lr1e-2"}
    assert "[done]" not in planned


def test_gpus_the_partition_does_not_have_are_refused_before_anything_is_submitted(slurm, tmp_path):
    proc = run(["bash", SCRIPTS / "demo.sh", "--quick", "--out-dir", tmp_path / "out", "--launcher", "slurm"],
               {"SLURM_CONF": slurm}, check=False)
    assert proc.returncode == 1
    assert "--slurm-gpus-per-job 1: no node of the default partition has GPUs" in proc.stderr
    assert not (tmp_path / "out" / "slurm" / "jobs.json").exists() and "[submitted" not in proc.stdout


def submission_stopped_at_the_third_sbatch(slurm, tmp_path, third: str):
    """demo.sh --quick submitted to the cluster through an sbatch whose first two calls queue
    their jobs held (so that neither can start) and whose third runs the shell code ``third``
    instead; (the process, the ids of the two held jobs)."""
    shim = tmp_path / "bin"
    shim.mkdir()
    real = subprocess.run(["which", "sbatch"], capture_output=True, text=True).stdout.strip()
    (shim / "sbatch").write_text(f"#!/bin/bash\ncount=$(cat {tmp_path}/calls 2>/dev/null || echo 0)\n"
                                 f"echo $((count + 1)) > {tmp_path}/calls\n"
                                 f"if [ \"$count\" -ge 2 ]; then {third}; fi\n"
                                 f"exec {real} --hold \"$@\"\n")
    (shim / "sbatch").chmod(0o755)
    env = {"SLURM_CONF": slurm, "PATH": f"{shim}:{os.environ['PATH']}"}
    proc = run([*CTRL_C_DEFAULT, "bash", SCRIPTS / "demo.sh", "--quick", "--out-dir", tmp_path / "out", *ON_SLURM],
               env, check=False)
    return proc, re.findall(r"\[submitted (\d+)\]", proc.stdout)


def assert_cancelled_and_unrecorded(slurm, tmp_path, ids):
    try:
        assert len(ids) == 2
        assert not (tmp_path / "out" / "slurm" / "jobs.json").exists()
        for job_id in ids:
            poll_slurm(["scontrol", "show", "job", job_id], slurm, lambda said: "JobState=CANCELLED" in said,
                       seconds=10)
    finally:  # held jobs a failed test left would stay queued for ever
        subprocess.run(["scancel", *ids], capture_output=True, env={**os.environ, "SLURM_CONF": slurm})


def test_a_submission_sbatch_refuses_half_way_cancels_what_it_submitted(slurm, tmp_path):
    """sbatch refuses the third job (a cluster's submit limit, say): the two it queued are
    cancelled, the runner says so once the controller shows it, and nothing says they are
    queued."""
    proc, ids = submission_stopped_at_the_third_sbatch(
        slurm, tmp_path, "echo 'sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
                         "(job submit limit)' >&2; exit 1")
    try:
        assert proc.returncode == 1
        assert re.search(r"sbatch refused .*job submit limit.*; of the 2 job\(s\) this submission had queued, 2 were "
                         rf"cancelled \({ids[0]}, {ids[1]}\)$", proc.stderr.strip()), proc.stderr
    finally:
        assert_cancelled_and_unrecorded(slurm, tmp_path, ids)


def test_ctrl_c_during_a_submission_cancels_what_it_submitted(slurm, tmp_path):
    """Ctrl-C while the third job is being submitted (the runner calls sbatch itself: the
    shim's parent is the runner): as when sbatch refuses one, the two queued before it are
    cancelled, the runner says so, and nothing says they are queued, so that a re-run submits
    the whole graph once."""
    proc, ids = submission_stopped_at_the_third_sbatch(slurm, tmp_path, "kill -INT $PPID; sleep 5; exit 1")
    try:
        assert proc.returncode == 130, proc.stderr
        assert re.search(r"interrupted: the submission was stopped; of the 2 job\(s\) it had queued, 2 were "
                         rf"cancelled \({ids[0]}, {ids[1]}\)$", proc.stderr.strip()), proc.stderr
    finally:
        assert_cancelled_and_unrecorded(slurm, tmp_path, ids)


def test_a_queued_job_that_waits_on_a_failed_one_is_replaced(slurm, tmp_path):
    """A job pending for ever (its dependency failed, and it was submitted without
    --kill-on-invalid-dep) is no job queued: a re-run cancels it and submits the job anew."""
    env = {**os.environ, "SLURM_CONF": slurm}
    failed = subprocess.run(["sbatch", "--parsable", "--wrap", "exit 1", "-o", "/dev/null"], capture_output=True,
                            text=True, env=env, check=True).stdout.strip()
    poll_slurm(["squeue", "-h", "-j", failed, "-o", "%T"], slurm, lambda said: not said.strip(), seconds=60)
    stuck = subprocess.run(["sbatch", "--parsable", f"--dependency=afterok:{failed}", "--kill-on-invalid-dep=no",
                            "--wrap", "true", "-o", "/dev/null"], capture_output=True, text=True, env=env,
                           check=True).stdout.strip()
    poll_slurm(["squeue", "-h", "-j", stuck, "-o", "%r"], slurm,
               lambda said: said.strip() == "DependencyNeverSatisfied")
    out = tmp_path / "out"
    (out / "slurm").mkdir(parents=True)
    (out / "slurm" / "jobs.json").write_text(json.dumps({"prepare": stuck}))
    try:
        proc = run(["bash", SCRIPTS / "demo.sh", "--quick", "--systems", "transformer_abs", "--out-dir", out, *ON_SLURM],
                   {"SLURM_CONF": slurm})
    finally:
        cancel_all(out, slurm)
    assert f"[cancelled {stuck}: a job it waits for failed] prepare" in proc.stdout
    new = json.loads((out / "slurm" / "jobs.json").read_text())["prepare"]
    assert new != stuck and f"[submitted {new}] prepare" in proc.stdout
    assert "--kill-on-invalid-dep=yes" in (out / "slurm" / "transformer_abs.sbatch").read_text()


def test_a_job_being_requeued_is_a_job_queued(slurm, tmp_path, monkeypatch):
    """scontrol requeue (or a preemption) shows a running job COMPLETING while its processes
    end, then PENDING: a submission asks until SLURM shows which, rather than taking the job
    for ended and submitting its steps a second time beside it.  (And squeue tells a running
    job its time left.)"""
    monkeypatch.setenv("SLURM_CONF", slurm)
    started = tmp_path / "started"
    job = subprocess.run(["sbatch", "--parsable", "--requeue", "--time=5", "-o", "/dev/null", "--wrap",
                          f"trap 'sleep 3; exit 1' TERM; touch {started}; sleep 300 & wait"],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        deadline = time.monotonic() + 60
        while not started.exists():  # running, its trap set
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.2)
        assert 240 < time_left(job) <= 300  # what a job's runner counts down from (engine/time_limit.py)
        subprocess.run(["scontrol", "requeue", job], check=True)
        assert queue_states([job])[job][0] == "PENDING"
    finally:
        subprocess.run(["scancel", job], capture_output=True)


def test_ctrl_c_under_wait_says_the_jobs_go_on_and_how_to_follow_or_cancel_them(slurm, tmp_path):
    """Ctrl-C while --wait follows the jobs (held here: they stay queued) stops the waiting,
    not the jobs: the message says so, with their ids, and they are still queued."""
    out = tmp_path / "out"
    stderr = tmp_path / "stderr"
    command = ["bash", SCRIPTS / "demo.sh", "--quick", "--systems", "transformer_abs", "--out-dir", out, *ON_SLURM,
               "--slurm-args=--hold", "--wait"]
    with open(stderr, "w") as err:
        proc = subprocess.Popen([*CTRL_C_DEFAULT, *map(str, command)], stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
                                env={**os.environ, "SLURM_CONF": slurm, "PYTHONFAULTHANDLER": "1"},
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "waiting for" not in stderr.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, stderr.read_text()
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C reaches the terminal's foreground group
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:  # where it was stuck: faulthandler prints every thread's stack
            os.kill(proc.pid, signal.SIGABRT)
            proc.wait(30)
            pytest.fail("the runner did not end within 60 s of Ctrl-C; its stderr:\n" + stderr.read_text())
        assert code == 130, stderr.read_text()
        ids = submitted_ids(out)
        said = stderr.read_text()
        assert len(ids) == 3 and "the steps that were running were stopped" not in said  # data, system, report
        assert (f"interrupted: stopped waiting, but the 3 SLURM job(s) go on ({', '.join(ids)}): follow them with "
                f"squeue -j {','.join(ids)}; cancel them with scancel {' '.join(ids)}") in said, said
        queued = subprocess.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i %T"], capture_output=True, text=True,
                                env={**os.environ, "SLURM_CONF": slurm}).stdout.splitlines()
        assert sorted(queued) == sorted(f"{job} PENDING" for job in ids)
    finally:
        if proc.poll() is None:
            proc.kill()
        cancel_all(out, slurm)


@pytest.mark.parametrize("status", ["failed", "running"])
def test_a_training_slurm_ended_gives_slurms_state_as_its_reason(slurm, tmp_path, monkeypatch, status):
    """A training whose job was cancelled: the reason a board and the choice of a learning
    rate give is SLURM's state, not the last line of its log (where it was stopped)."""
    monkeypatch.setenv("SLURM_CONF", slurm)
    job = subprocess.run(["sbatch", "--parsable", "--hold", "--wrap", "true", "-o", "/dev/null"], capture_output=True,
                         text=True, check=True).stdout.strip()
    subprocess.run(["scancel", job], check=True)
    poll_slurm(["scontrol", "show", "job", job], slurm, lambda said: "JobState=CANCELLED" in said, seconds=10)
    folder = tmp_path / "transformer_rel-lr1e-3"
    step = Step("train", ["true"], home=folder)
    error = "train transformer_rel failed (exit 143): Saved checkpoint checkpoint_last.pt (epoch 3 @ 60 updates)"
    manifest.write(step.manifest_path, manifest.Record(step="train", status=status, command=["true"], identity=[],
                                                       root=".", inputs={}, outputs={}, job_id=job,
                                                       error=error if status == "failed" else None))
    assert unfinished([step]) == f"train: SLURM ended its job {job}: CANCELLED (see {step.log_path})"
    assert _grid_point(folder).failure == f"SLURM ended its job {job}: CANCELLED"


def test_a_training_that_keeps_reaching_its_time_limit_is_requeued_at_most_so_often(slurm, tmp_path):
    """--slurm-time 1 (a minute) and a training far longer: the job requeues itself before its
    limit, once (--slurm-max-requeues 1); at the limit again it fails, saying why, its
    manifest counting the requeues."""
    env = {**os.environ, "SLURM_CONF": slurm}
    out = tmp_path / "out"
    # short sentences, and far more updates than a minute takes
    demo = ["--systems", "transformer_abs", "--train-limit", "16", "--updates", "100000", "--out-dir", out, *ON_SLURM]
    refused = run(["bash", SCRIPTS / "demo.sh", *demo, "--slurm-time", "2:00"], env, check=False)
    assert refused.returncode == 1 and "--slurm-time 2:00 (120 s) is not longer than the 180 s" in refused.stderr
    try:
        # the data first, without the one-minute limit, which under load would cut the data's job
        # too: the jobs submitted held, the data's released, the others cancelled
        run(["bash", SCRIPTS / "demo.sh", *demo, "--slurm-args=--hold"], env)
        jobs = json.loads((out / "slurm" / "jobs.json").read_text())
        subprocess.run(["scontrol", "release", jobs["prepare"]], check=True, env=env)
        data = poll_slurm(["scontrol", "show", "job", jobs["prepare"]], slurm,
                          lambda said: re.search(r"JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT)", said), seconds=600)
        assert "JobState=COMPLETED" in data, cluster_report(jobs, out, slurm)
        subprocess.run(["scancel", *(job for name, job in jobs.items() if name != "prepare")], check=True, env=env)
        # each start is near its limit 5 s in: starts, not the training's progress, are what counts
        run(["bash", SCRIPTS / "demo.sh", *demo, "--slurm-time", "1", "--slurm-requeue-margin", "55",
             "--slurm-max-requeues", "1"], env)
        manifest = out / "transformer_abs" / ".steps" / "train.json"
        deadline = time.time() + 420
        # until the step's manifest says how it ended (squeue can print nothing for a job
        # that is being requeued, so its silence does not say the job has ended)
        while not manifest.exists() or json.loads(manifest.read_text())["status"] == "running":
            assert time.time() < deadline, \
                f"the training job never ended\n{cluster_report(json.loads((out / 'slurm' / 'jobs.json').read_text()), out, slurm)}"
            time.sleep(1)
    finally:
        cancel_all(out, slurm)
    record = json.loads(manifest.read_text())
    assert record["status"] == "failed" and record["requeues"] == 2
    assert "reached its SLURM time limit 2 times; requeued 1 times (--slurm-max-requeues 1)" in record["error"]
    log = (out / "transformer_abs" / "train.log").read_text()
    # the step started twice, once and once requeued (each start heads the log with its command);
    # how far fairseq got within a start depends on how fast the job's Python started
    starts = [line for line in log.splitlines() if line.startswith("# ") and "fairseq_train" in line]
    assert len(starts) == 2
    # the job's runner counts down to its margin itself (5 s into each start), not waiting for
    # SLURM's warning, which the controller sends only at its next pass over the jobs (every 30 s
    # here): what the second start logged ends well within the minute (under load it may be
    # stopped before fairseq has logged anything)
    second = log.split(starts[1], 1)[1]
    began = datetime.fromisoformat(starts[1].split()[1])
    ended = max((datetime.fromisoformat(stamp).astimezone()  # fairseq's times are local
                 for stamp in re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \|", second, re.M)),
                default=began)
    assert (ended - began).total_seconds() < 20, second[-2000:]
