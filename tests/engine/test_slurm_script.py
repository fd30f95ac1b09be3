"""A job's sbatch script and the queue's answer, without a cluster: the script is a function
of the job, the launch's options, the jobs it waits for, the environment and the log folder;
one squeue answer gives every job's state (tests/cluster/ submits such scripts for real)."""
import time
from pathlib import Path

from relpos_recipes.engine import Job, Launch, Step, time_limit
from relpos_recipes.engine.launch import SlurmOptions
from relpos_recipes.engine.slurm import JobEnvironment, job_script
from relpos_recipes.engine.slurm_queue import parse_queue, slurm_seconds

ENVIRONMENT = JobEnvironment(folder="/work/my runs", venv="/work/.venv", variables={"SMOKE": "1",
                                                                                    "TRAIN_EXTRA_ARGS": "--seed 2"})


def training(tmp_path) -> Job:
    train = Step("train", ["true"], home=tmp_path, in_place_outputs=[tmp_path / "checkpoint_last.pt"])
    return Job("abs", [train])


def test_a_training_jobs_script_asks_for_its_gpus_requeues_itself_and_waits_for_the_data(tmp_path):
    launch = Launch("demo", ["--out", "runs", "--launcher", "slurm", "--slurm-time", "1:00:00", "--wait", "--gpus", "1"],
                    threads=8, slurm=SlurmOptions(partition="gpu", gpus_per_job=2, time="1:00:00", mem="8G",
                                                  args="--qos=low --exclusive", requeue_margin=120))
    script = job_script(training(tmp_path), launch, ["70", "71"], ENVIRONMENT, Path("runs/slurm"), node_cpus=6)
    assert script == "\n".join([
        "#!/bin/bash",
        "#SBATCH --job-name=relpos-demo-abs",
        "#SBATCH --output=runs/slurm/abs-%j.out",
        "#SBATCH --open-mode=append",
        "#SBATCH --cpus-per-task=6",  # 4 a GPU, at most what the largest node has
        "#SBATCH --nodes=1",
        "#SBATCH --kill-on-invalid-dep=yes",
        "#SBATCH --gres=gpu:2",
        "#SBATCH --ntasks=1",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=1:00:00",
        "#SBATCH --mem=8G",
        "#SBATCH --requeue",
        "#SBATCH --signal=B:USR1@120",
        "#SBATCH --dependency=afterok:70:71",
        "#SBATCH --qos=low",
        "#SBATCH --exclusive",
        f"# system job of: {launch.what()}",
        "trap '' USR1",  # SLURM's warning before Python hears it is not fatal
        "cd '/work/my runs'",
        "source /work/.venv/bin/activate",
        'export PL_ENV_READY="$VIRTUAL_ENV" TQDM_DISABLE=1',
        "export SMOKE=1",
        "export TRAIN_EXTRA_ARGS='--seed 2'",
        # the options about submitting are not the job's, but for its time limit and requeue
        # margin as the submission parsed them (120 s: the command line leaves it to the
        # options), from which the job's runner counts down
        "exec python -m relpos_recipes demo --out runs --gpus 1 --slurm-time 1:00:00 --slurm-requeue-margin 120 "
        "--run-job abs",
    ]) + "\n"


def test_a_report_waits_for_every_system_whatever_became_of_it_and_is_not_requeued(tmp_path):
    report = Job("report", [Step("report", ["true"], home=tmp_path)], kind="report", after_any=True)
    launch = Launch("demo", ["--out", "runs"], threads=8, slurm=SlurmOptions(gpus_per_job=1, nodes=2))
    lines = job_script(report, launch, ["70"], JobEnvironment("/w", "/v", {}), Path("s"), node_cpus=None).splitlines()
    assert [line for line in lines if line.startswith("#SBATCH")] == [
        "#SBATCH --job-name=relpos-demo-report", "#SBATCH --output=s/report-%j.out", "#SBATCH --open-mode=append",
        "#SBATCH --cpus-per-task=1", "#SBATCH --nodes=1", "#SBATCH --kill-on-invalid-dep=yes",
        "#SBATCH --no-requeue", "#SBATCH --dependency=afterany:70"]
    assert not any(line.startswith("export SMOKE") for line in lines)


def test_the_data_job_takes_the_recipes_threads_and_a_system_on_several_nodes_one_task_a_gpu(tmp_path):
    prepare = Job("prepare", [Step("prepare", ["true"], home=tmp_path)], kind="prepare")
    launch = Launch("demo", [], threads=12, slurm=SlurmOptions(gpus_per_job=4, nodes=2))
    assert "#SBATCH --cpus-per-task=12" in job_script(prepare, launch, [], ENVIRONMENT, Path("s"), None)
    assert "#SBATCH --cpus-per-task=8" in job_script(prepare, launch, [], ENVIRONMENT, Path("s"), node_cpus=8)
    system = job_script(training(tmp_path), launch, [], ENVIRONMENT, Path("s"), None).splitlines()
    assert {"#SBATCH --cpus-per-task=16", "#SBATCH --nodes=2", "#SBATCH --gres=gpu:4",
            "#SBATCH --ntasks-per-node=4"} <= set(system)
    assert not any(line.startswith(("#SBATCH --dependency", "#SBATCH --signal")) for line in system)
    launch.slurm.cpus_per_job = 3
    assert "#SBATCH --cpus-per-task=3" in job_script(prepare, launch, [], ENVIRONMENT, Path("s"), node_cpus=8)


def test_one_squeue_answer_gives_each_listed_jobs_state_and_reason():
    answer = "70 RUNNING None\n71 PENDING DependencyNeverSatisfied\n\n72 COMPLETED None\n"
    assert parse_queue(answer) == {"70": ("RUNNING", "None"), "71": ("PENDING", "DependencyNeverSatisfied"),
                                   "72": ("COMPLETED", "None")}
    assert parse_queue("") == {}


def test_a_job_exports_those_of_the_recipes_variables_that_are_set_here(monkeypatch):
    monkeypatch.setenv("SMOKE", "1")
    monkeypatch.delenv("SKIP_REPORT", raising=False)
    monkeypatch.setenv("NOT_THE_RECIPES", "x")
    assert JobEnvironment.here(["SMOKE", "SKIP_REPORT"]).variables == {"SMOKE": "1"}


def test_squeues_time_left_in_seconds():
    assert [slurm_seconds(text) for text in ("0:50", "59:59", "1:00:00\n", "2-03:04:05")] == [50, 3599, 3600, 183845]
    assert [slurm_seconds(text) for text in ("UNLIMITED", "NOT_SET", "INVALID", "")] == [None] * 4


def test_the_time_limit_is_near_its_margin_before_the_end_with_or_without_slurms_signal(monkeypatch):
    """SLURM sends its warning once, and has sent it before the job's Python could hear it:
    a job also counts down from the time SLURM says it has left."""
    monkeypatch.setattr(time_limit, "near", time_limit.threading.Event())
    time_limit.watch(None, 50)  # no limit known: the signal alone tells
    timer = time_limit.watch(3600, 50)  # 59 minutes 10 s from now
    assert not time_limit.near.is_set() and timer.interval == 3550
    timer.cancel()
    monkeypatch.setattr(time_limit, "near", time_limit.threading.Event())
    time_limit.watch(45, 50)  # started within the margin
    assert time_limit.near.is_set()
    monkeypatch.setattr(time_limit, "near", time_limit.threading.Event())
    started = time.monotonic()
    time_limit.watch(50.3, 50)
    assert time_limit.near.wait(5) and time.monotonic() - started >= 0.25
