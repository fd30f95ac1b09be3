"""Where a recipe's steps run: on this machine (``--launcher local``, the default) or as SLURM
jobs (``--launcher slurm``).

A recipe groups its steps into **jobs**: the preparation, one job per system (its training,
then its translations), the reports.  Locally the steps simply run (recipes.engine).  On
SLURM each job that is not done becomes one ``sbatch`` script that runs the same recipe
command with ``--run-job NAME``: the job builds the same graph on its node and runs the
steps of its group, so the manifests decide what is done there exactly as they do here.
Jobs wait for the jobs whose outputs they read (``afterok``); reports wait for every system
whatever became of it (``afterany``) and show the failures.  Training jobs are requeueable:
one stopped by preemption, a node failure, ``scontrol requeue`` or (with ``--slurm-time``)
its time limit starts again and resumes from its last checkpoint.
"""
import argparse
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from ..graphs.options import positive_int
from .core import (Console, FolderLock, LocalExecutor, Outcome, Step, StepError, check_graph,
                     describe, plan, read_manifest, record_legacy)

# the environment that changes what a recipe does, handed to its jobs
RECIPE_ENVIRONMENT = ("SMOKE", "SMOKE_DATA", "TRAIN_EXTRA_ARGS", "REPORT_TOKENIZE", "REPORT_EXTRA_ARGS",
                      "RELPOS_ARCH_OVERRIDE", "SKIP_REPORT", "OMP_NUM_THREADS")
# squeue's reasons for a pending job that will never start, with why: cancelled by --wait
UNRUNNABLE = "SLURM will never start it ({}: it asks for more than the partition gives)"
NEVER_STARTS = {"DependencyNeverSatisfied": "a job it waits for failed",
                **{reason: UNRUNNABLE.format(reason) for reason in
                   ("PartitionConfig", "BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit")}}
REQUEUE_WARNING_SECONDS = 180  # before --slurm-time ends, a training job requeues itself


@dataclasses.dataclass(eq=False)
class Job:
    name: str  # unique in the recipe; a file name
    steps: List[Step]
    kind: str = "system"  # prepare | system | report
    # its steps run whatever became of the jobs before it (reports of failed systems)
    after_any: bool = False

    @property
    def trains(self) -> bool:
        return any(step.in_place for step in self.steps)


def add_launcher_options(parser) -> None:
    parser.add_argument("--launcher", choices=("local", "slurm"), default="local")
    parser.add_argument("--slurm-partition")
    parser.add_argument("--slurm-gpus-per-job", type=_count, default=1)
    parser.add_argument("--slurm-cpus-per-job", type=positive_int)
    parser.add_argument("--slurm-nodes", type=positive_int, default=1)
    parser.add_argument("--slurm-time")
    parser.add_argument("--slurm-mem")
    parser.add_argument("--slurm-args", default="")
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--run-job", help=argparse.SUPPRESS)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of GPUs (0 for none), got '{text}'")
    return int(text)


def job_dependencies(jobs: Sequence[Job]) -> Dict[Job, List[Job]]:
    """The jobs each job waits for: those writing what its steps read."""
    upstream = check_graph([step for job in jobs for step in job.steps])
    owner = {step: job for job in jobs for step in job.steps}
    return {job: list(dict.fromkeys(owner[u] for step in job.steps for u in upstream[step] if owner[u] is not job))
            for job in jobs}


def failures_of(jobs: Iterable[Job]) -> Dict[str, str]:
    """Each system job that did not finish, with why: its failed step's error from its
    manifest, or that it did not run."""
    found = {}
    for job in jobs:
        if job.kind != "system":
            continue
        for step in job.steps:
            record = read_manifest(step)
            if record and record.get("status") == "failed":
                found[job.name] = record.get("error", "failed")
                break
            if not (record and record.get("status") == "done") or not all(p.exists() for p in step.outputs):
                found[job.name] = f"{step.description} did not finish (see {step.log_path})"
                break
    return found


# ----------------------------------------------------------------------------------------
# running a recipe's jobs
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Launch:
    """What the recipe's command line says about where it runs."""

    recipe: str  # python -m relpos_recipes NAME
    argv: Sequence[str]  # its arguments, to hand to the jobs
    args: argparse.Namespace
    roots: Sequence[Path]  # the folders of the run: locked, and the SLURM logs go to the first
    threads: int
    gpus: int
    console: Console = dataclasses.field(default_factory=Console)

    @property
    def log_dir(self) -> Path:
        return Path(self.roots[-1]) / "slurm"

    def run(self, jobs: Sequence[Job], keep_going: bool = False) -> Optional[Outcome]:
        """Runs the jobs here, submits them to SLURM, or runs the one job --run-job names."""
        if self.args.run_job:
            return self._run_job(jobs, self.args.run_job)
        if self.args.launcher == "slurm":
            Slurm(self).submit(jobs)
            return None
        steps = [step for job in jobs for step in job.steps]
        if self.args.dry_run:
            print(describe(plan(steps)))
            return None
        with FolderLock(self.roots, _what(self)):
            return LocalExecutor(self.threads, self.gpus, self.console).run(steps, keep_going=keep_going)

    def _run_job(self, jobs: Sequence[Job], name: str) -> Outcome:
        job = next((j for j in jobs if j.name == name), None)
        if job is None:
            raise StepError(f"--run-job {name}: the recipe has no such job (its jobs: "
                            f"{', '.join(j.name for j in jobs)})")
        homes = {step.home for step in job.steps}
        # shared on the run's folders (other jobs run beside it), its own folders exclusively
        with FolderLock(self.roots, _what(self), shared=True), FolderLock(homes, f"SLURM job {name}"):
            cpus = int(os.environ.get("SLURM_CPUS_PER_TASK", self.threads))
            gpus = len([g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g])
            return LocalExecutor(cpus, gpus, self.console).run(job.steps, keep_going=job.after_any)


def _what(launch: Launch) -> str:
    return " ".join(shlex.quote(a) for a in ["python", "-m", "relpos_recipes", launch.recipe, *launch.argv])


class Slurm:
    """Submits a recipe's jobs with sbatch, each depending on the jobs it reads from."""

    def __init__(self, launch: Launch):
        self.launch = launch
        self.args = launch.args
        self.record = launch.log_dir / "jobs.json"  # job name -> SLURM job id of the last submission
        self.node_cpus = largest_node_cpus(self.args.slurm_partition)  # None where sinfo does not say

    def submit(self, jobs: Sequence[Job]) -> None:
        args = self.args
        if args.slurm_nodes > 1 and args.slurm_gpus_per_job == 0:
            raise StepError("--slurm-nodes > 1 needs --slurm-gpus-per-job: one training task per GPU")
        planned = {job: plan(job.steps) for job in jobs}
        done = {job: all(state.done for _, state in planned[job]) for job in jobs}
        if not args.dry_run:  # what an older version's markers say is done gets its manifest now
            for step, state in (pair for job in jobs for pair in planned[job]):
                if state.done and state.reason:
                    record_legacy(step)
        depends = job_dependencies(jobs)
        previous = self._previous()
        ids: Dict[Job, str] = {}
        lines = []
        for job in _in_order(jobs, depends):
            queued = previous.get(job.name)
            if done[job]:
                lines.append(f"[done] {job.name}")
                continue
            if queued and self._queued(queued):
                ids[job] = queued
                lines.append(f"[queued before: {queued}] {job.name}")
                continue
            after = [ids[d] for d in depends[job] if d in ids]
            script = self.script(job, after)
            if args.dry_run:
                lines.append(f"[submit] {job.name}" + (f" after {', '.join(d.name for d in depends[job])}" if depends[job] else ""))
                print(f"# --- job {job.name} ---\n{script}")
                ids[job] = f"<{job.name}>"
                continue
            ids[job] = self._sbatch(job, script)
            lines.append(f"[submitted {ids[job]}] {job.name}" + (f" (after {', '.join(after)})" if after else ""))
        print("\n".join(lines))
        if args.dry_run:
            return
        self._remember({**previous, **{job.name: ids[job] for job in ids}})
        if args.wait and ids:
            self.wait(ids)

    # --- the job script ---------------------------------------------------------------
    def script(self, job: Job, after: Sequence[str]) -> str:
        args, launch = self.args, self.launch
        gpus = args.slurm_gpus_per_job if job.kind == "system" else 0
        nodes = args.slurm_nodes if job.kind == "system" else 1
        cpus = self._cpus(job.kind, gpus)
        options = [f"--job-name=relpos-{launch.recipe}-{job.name}", f"--output={launch.log_dir}/{job.name}-%j.out",
                   "--open-mode=append", f"--cpus-per-task={cpus}", f"--nodes={nodes}"]
        if gpus:
            options += [f"--gres=gpu:{gpus}", f"--ntasks-per-node={gpus}" if nodes > 1 else "--ntasks=1"]
        if args.slurm_partition:
            options.append(f"--partition={args.slurm_partition}")
        if args.slurm_time:
            options.append(f"--time={args.slurm_time}")
        if args.slurm_mem:
            options.append(f"--mem={args.slurm_mem}")
        if job.trains:
            options.append("--requeue")
            if args.slurm_time:
                options.append(f"--signal=B:USR1@{REQUEUE_WARNING_SECONDS}")
        else:
            options.append("--no-requeue")
        if after:
            options.append(f"--dependency={'afterany' if job.after_any else 'afterok'}:{':'.join(after)}")
        options += shlex.split(args.slurm_args)
        environment = {name: os.environ[name] for name in RECIPE_ENVIRONMENT if name in os.environ}
        command = ["python", "-m", "relpos_recipes", launch.recipe, *_without_launcher(launch.argv), "--run-job", job.name]
        venv = os.environ.get("VIRTUAL_ENV") or str(Path(sys.executable).parent.parent)
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in options),
                 f"# {job.kind} job of: {_what(launch)}",
                 "set -uo pipefail",
                 f"cd {shlex.quote(os.getcwd())}",  # where the recipe's relative paths start
                 f"source {shlex.quote(venv)}/bin/activate",
                 "export PL_ENV_READY=\"$VIRTUAL_ENV\" TQDM_DISABLE=1",
                 *(f"export {name}={shlex.quote(value)}" for name, value in environment.items())]
        if job.trains:
            lines += ["# preempted or near its time limit: back in the queue, to resume from its last checkpoint",
                      "requeue() { echo \"requeueing job $SLURM_JOB_ID\"; scontrol requeue \"$SLURM_JOB_ID\"; }",
                      "trap requeue USR1",
                      f"{' '.join(shlex.quote(c) for c in command)} &",
                      "child=$!",
                      "wait \"$child\"; status=$?",
                      "while kill -0 \"$child\" 2> /dev/null; do wait \"$child\"; status=$?; done  # a trap interrupts wait",
                      "exit $status"]
        else:
            lines.append(f"exec {' '.join(shlex.quote(c) for c in command)}")
        return "\n".join(lines) + "\n"

    def _cpus(self, kind: str, gpus: int) -> int:
        """The CPUs a job asks for: --slurm-cpus-per-job, or by default the recipe's threads
        for the data and 4 a GPU (1 without) for a system, at most what a node has: a job
        that asks for more than any node of the partition would wait in the queue for ever."""
        largest, where = self.node_cpus, self.args.slurm_partition or "the default partition"
        if self.args.slurm_cpus_per_job:
            if largest and self.args.slurm_cpus_per_job > largest:
                raise StepError(f"--slurm-cpus-per-job {self.args.slurm_cpus_per_job}: the largest node of "
                                f"{where} has {largest} CPUs")
            return self.args.slurm_cpus_per_job
        wanted = self.launch.threads if kind == "prepare" else max(1, gpus) * 4 if gpus else 1
        return min(wanted, largest) if largest else wanted

    def _sbatch(self, job: Job, script: str) -> str:
        self.launch.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.launch.log_dir / f"{job.name}.sbatch"
        path.write_text(script, encoding="utf-8")
        proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepError(f"sbatch refused {path}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout.strip().split(";")[0]

    # --- what was submitted before ----------------------------------------------------
    def _previous(self) -> Dict[str, str]:
        try:
            return json.loads(self.record.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}

    def _remember(self, ids: Dict[str, str]) -> None:
        self.record.parent.mkdir(parents=True, exist_ok=True)
        temp = self.record.with_name(f".tmp.{os.getpid()}.{self.record.name}")
        temp.write_text(json.dumps(ids, indent=1) + "\n", encoding="utf-8")
        os.replace(temp, self.record)

    @staticmethod
    def _queued(job_id: str) -> bool:
        proc = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True)
        return proc.returncode == 0 and proc.stdout.strip() in ("PENDING", "RUNNING", "CONFIGURING", "REQUEUED",
                                                                "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED")

    # --- --wait -----------------------------------------------------------------------
    def wait(self, ids: Dict[Job, str]) -> None:
        """Follows the submitted (or still queued) jobs to their end; a job that would never
        start is cancelled and named rather than waited for."""
        console = self.launch.console
        console.log(f"waiting for {len(ids)} SLURM job(s): {', '.join(ids.values())}")
        while True:
            proc = subprocess.run(["squeue", "-h", "-j", ",".join(ids.values()), "-o", "%i %T %r"],
                                  capture_output=True, text=True)
            remaining = [line.split() for line in proc.stdout.splitlines() if line.strip()]
            if not remaining:
                break
            never = [(fields[0], NEVER_STARTS[fields[-1]]) for fields in remaining if fields[-1] in NEVER_STARTS]
            for job_id, why in never:
                console.log(f"cancelling job {job_id}: {why} (see scontrol show job {job_id})")
            if never:
                subprocess.run(["scancel", *(job_id for job_id, _ in never)])
            time.sleep(2)
        unfinished = []  # the data or a report: without them there is nothing to report
        for job, job_id in ids.items():
            state = job_state(job_id)
            console.log(f"job {job_id} {job.name}: {state}")
            if job.kind != "system" and not state.startswith("COMPLETED"):
                unfinished.append(f"{job.name} ({state}; {self.launch.log_dir}/{job.name}-{job_id}.out)")
        failed = failures_of(ids)
        for name, error in failed.items():
            console.log(f"FAILED {name}: {error}")
        if unfinished:
            raise StepError(f"SLURM job(s) did not complete: {', '.join(unfinished)}")


def largest_node_cpus(partition: Optional[str]) -> Optional[int]:
    """The CPUs of the partition's largest node (the default partition's without one), or
    None where sinfo does not say."""
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%c %P", *(["-p", partition] if partition else [])],
                              capture_output=True, text=True)
    except OSError:  # no SLURM here: a --dry-run elsewhere
        return None
    counts = [int(fields[0]) for fields in (line.split() for line in proc.stdout.splitlines())
              if len(fields) == 2 and fields[0].isdigit() and (partition or fields[1].endswith("*"))]
    return max(counts) if proc.returncode == 0 and counts else None


def job_state(job_id: str) -> str:
    """A finished job's state, from scontrol (sacct needs accounting, which a small
    cluster may not have)."""
    proc = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True)
    match = re.search(r"JobState=(\S+)", proc.stdout)
    restarts = re.search(r"Restarts=(\d+)", proc.stdout)
    state = match.group(1) if match else "(no longer known to slurmctld)"
    return state + (f", restarted {restarts.group(1)}x" if restarts and restarts.group(1) != "0" else "")


def _in_order(jobs: Sequence[Job], depends: Dict[Job, List[Job]]) -> List[Job]:
    order, seen = [], set()

    def visit(job):
        if job in seen:
            return
        seen.add(job)
        for d in depends[job]:
            visit(d)
        order.append(job)

    for job in jobs:
        visit(job)
    return order


def _without_launcher(argv: Sequence[str]) -> List[str]:
    """The recipe's arguments without those about submitting (the job runs its steps)."""
    valued = {"--launcher", "--slurm-partition", "--slurm-gpus-per-job", "--slurm-cpus-per-job", "--slurm-nodes",
              "--slurm-time", "--slurm-mem", "--slurm-args"}
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in valued:
            skip = "=" not in arg
            continue
        if arg in ("--wait", "--dry-run"):
            continue
        kept.append(arg)
    return kept
