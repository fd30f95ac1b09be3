"""A recipe's graph as SLURM jobs (``--launcher slurm``).

The whole graph is planned at submission, as a local run plans it: a job is submitted when
any of its steps would run, including because something upstream will run, and a job whose
later part waits for a decision is submitted too.  Each submitted job is one ``sbatch``
script running the same recipe command with ``--run-job NAME``: the job builds the same graph
on its node and runs its steps, then builds its later part (the job boundary is the re-plan
point) and runs that, so the manifests decide what is done there exactly as they do here.
Jobs wait for the jobs whose outputs they read (``afterok``, cancelled by SLURM when one of
those fails: ``--kill-on-invalid-dep=yes``); reports wait for every system whatever became of
it (``afterany``).  Training jobs are requeueable: one stopped by preemption, a node failure
or ``scontrol requeue`` starts again and resumes from its last checkpoint; near its
``--slurm-time`` limit (``--slurm-requeue-margin`` before it) it requeues itself, at most
``--slurm-max-requeues`` times (counted in its training's manifest), then fails saying so.
"""
import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from . import manifest, time_limit
from .executor import Executor, Outcome
from .graph import Graph, Job
from .launch import Launch, SlurmOptions
from .local import LocalRunner, TimeLimit
from .lock import FolderLock
from .plan import Plan, plan
from .slurm_queue import (FINAL_STATES, LIVE_STATES, NEVER_STARTS, SETTLE_SECONDS, job_state, largest_node_cpus,
                          listed_jobs, partition_has_gpus, queue_states, show_job, slurm_seconds, time_left)
from .step import StepError

# how long a cancellation waits for the controller to show the jobs ended
CANCEL_SECONDS = 10
# the recipe options about submitting, which a job's own command line does not take
_SUBMISSION_OPTIONS = {"--launcher", "--slurm-partition", "--slurm-gpus-per-job", "--slurm-cpus-per-job", "--slurm-nodes",
                       "--slurm-time", "--slurm-mem", "--slurm-args", "--slurm-requeue-margin"}


def log_dir(graph: Graph) -> Path:
    return Path(graph.roots[-1]) / "slurm"


class SlurmExecutor(Executor):
    """``--launcher slurm``: the graph's jobs submitted with sbatch (followed to their end with
    ``--wait``); ``--run-job NAME``: one of them, run inside its SLURM job."""

    def run(self, graph: Graph) -> Optional[Outcome]:
        if self.launch.run_job:
            return run_job(graph, self.launch)
        Submitter(graph, self.launch).submit()
        return None


# ----------------------------------------------------------------------------------------
# inside a job
# ----------------------------------------------------------------------------------------
def run_job(graph: Graph, launch: Launch) -> Outcome:
    """Runs job ``--run-job NAME``: its steps, then its later part, built from what they and
    the jobs before it wrote."""
    job = graph.job(launch.run_job)
    if job is None:
        raise StepError(f"--run-job {launch.run_job}: the recipe has no such job (its jobs: "
                        f"{', '.join(j.name for j in graph.jobs)})")
    alone = Graph([Job(job.name, job.steps, job.later, kind=job.kind, after_any=job.after_any)], graph.roots,
                  keep_going=job.after_any or graph.keep_going)
    cpus = int(os.environ.get("SLURM_CPUS_PER_TASK", launch.threads))
    gpus = len([g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g])
    runner = LocalRunner(cpus, gpus, launch.console, time_limit=job.trains, jobs_per_gpu=launch.jobs_per_gpu)
    if job.trains and launch.slurm.time:
        time_limit.watch(time_left(os.environ.get("SLURM_JOB_ID", "")), launch.slurm.requeue_margin)
    # shared: the recipe's other jobs run beside it; each step holds its own lock
    with FolderLock(graph.roots, launch.what(), shared=True):
        try:
            return runner.run(alone)
        except TimeLimit as limit:
            _requeue_or_fail(limit, launch)
            raise SystemExit(0)


def _requeue_or_fail(limit: TimeLimit, launch: Launch) -> None:
    """At the time limit: back in the queue, the trainings to resume from their last
    checkpoints; or, after --slurm-max-requeues requeues, failed, saying so."""
    cap, job_id = launch.slurm.max_requeues, os.environ.get("SLURM_JOB_ID", "")
    over = []
    for step in (s for s in limit.steps if s.in_place):
        record = manifest.of(step)
        if record is None:
            continue
        record.requeues += 1
        if record.requeues > cap:
            record.status, record.ended = "failed", manifest.now()
            record.error = (f"{step.description} reached its SLURM time limit {record.requeues} times; requeued "
                            f"{cap} times (--slurm-max-requeues {cap}), not again: give it more --slurm-time")
            over.append(record.error)
        manifest.write(step.manifest_path, record)
    if over:
        raise StepError("; ".join(over))
    launch.console.log(f"job {job_id} reached its time limit: requeued, its trainings resume from their last "
                       f"checkpoints (requeue {max((manifest.of(s).requeues for s in limit.steps if s.in_place), default=0)}"
                       f" of at most {cap})")
    subprocess.run(["scontrol", "requeue", job_id])


# ----------------------------------------------------------------------------------------
# submitting
# ----------------------------------------------------------------------------------------
class Submitter:
    """Submits a graph's jobs with sbatch, each depending on the jobs it reads from."""

    def __init__(self, graph: Graph, launch: Launch):
        self.graph = graph
        self.launch = launch
        self.options = launch.slurm
        self.log_dir = log_dir(graph)
        self.record = self.log_dir / "jobs.json"  # job name -> SLURM job id of the last submission
        self.node_cpus = largest_node_cpus(self.options.partition)  # None where sinfo does not say

    def submit(self) -> None:
        self._check_request()
        # shared with the recipe's jobs, exclusive among submissions: two at once would each
        # submit every job
        with FolderLock(self.graph.roots, self.launch.what(), shared=True), \
                FolderLock([self.log_dir], f"submission of {self.launch.what()}"):
            manifest.check_manifests(self.graph.roots)
            planned = plan(self.graph)
            ids = self._submit(planned)
        if self.launch.wait and ids and not self.launch.dry_run:
            self.wait(ids)

    def _check_request(self) -> None:
        options, where = self.options, self.options.partition or "the default partition"
        if options.nodes > 1 and options.gpus_per_job == 0:
            raise StepError("--slurm-nodes > 1 needs --slurm-gpus-per-job: one training task per GPU")
        if options.cpus_per_job and self.node_cpus and options.cpus_per_job > self.node_cpus:
            raise StepError(f"--slurm-cpus-per-job {options.cpus_per_job}: the largest node of {where} has "
                            f"{self.node_cpus} CPUs")
        if options.gpus_per_job and partition_has_gpus(options.partition) is False:
            raise StepError(f"--slurm-gpus-per-job {options.gpus_per_job}: no node of {where} has GPUs (sinfo "
                            "lists no gpu resource); use --slurm-gpus-per-job 0 to train on CPUs")
        if options.time is not None:
            seconds = time_limit_seconds(options.time)
            if seconds <= options.requeue_margin:
                raise StepError(f"--slurm-time {options.time} ({seconds} s) is not longer than the "
                                f"{options.requeue_margin} s before it at which a training requeues itself "
                                "(--slurm-requeue-margin): it would requeue as soon as it starts; give more time")

    def _submit(self, planned: Plan) -> Dict[Job, str]:
        depends = dependencies(self.graph, planned)
        previous = self._previous()
        environment = JobEnvironment.here(self.launch.environment)
        # one squeue call for the jobs of the last submission that would run again
        queued_before = [] if self.launch.dry_run else \
            [previous[job.name] for job in self.graph.jobs if job.name in previous and planned.job_runs(job)]
        queue = queue_states(queued_before) if queued_before else {}
        ids: Dict[Job, str] = {}
        submitted: List[str] = []
        lines = []
        try:
            for job in _in_order(self.graph.jobs, depends):
                if not planned.job_runs(job):
                    lines.append(f"[done] {job.name}")
                    continue
                queued = previous.get(job.name)
                state, reason = queue.get(queued, (None, None))
                if state == "COMPLETING":  # not yet known whether it ends or runs again
                    raise StepError(f"job {queued} of the last submission ({job.name}) is still COMPLETING "
                                    f"{SETTLE_SECONDS} s on: submit again once it has ended or is queued again "
                                    f"(squeue -j {queued})")
                if state in LIVE_STATES and reason not in NEVER_STARTS:
                    ids[job] = queued
                    lines.append(f"[queued before: {queued}] {job.name}")
                    continue
                if state in LIVE_STATES:  # it would wait for ever: it goes, and a new one takes its place
                    states, refused = cancel([queued])
                    why = NEVER_STARTS[reason]
                    lines.append(f"[cancelled {queued}: {why}] {job.name}" if states[queued] == "CANCELLED"
                                 else f"[job {queued} ({why}): {cancellation(states, refused)}] {job.name}")
                after = [ids[d] for d in depends[job] if d in ids]
                script = job_script(job, self.launch, after, environment, self.log_dir, self.node_cpus)
                if self.launch.dry_run:
                    waits = f" after {', '.join(d.name for d in depends[job])}" if depends[job] else ""
                    lines.append(f"[submit] {job.name}{waits}")
                    print(f"# --- job {job.name} ---\n{script}")
                    ids[job] = f"<{job.name}>"
                    continue
                ids[job] = self._sbatch(job, script)
                submitted.append(ids[job])
                lines.append(f"[submitted {ids[job]}] {job.name}" + (f" (after {', '.join(after)})" if after else ""))
        except StepError as error:
            if submitted:
                raise StepError(f"{error}; of the {len(submitted)} job(s) this submission had queued, "
                                f"{cancellation(*cancel(submitted))}") from None
            raise
        except KeyboardInterrupt:  # Ctrl-C while submitting: all or nothing, as a refusal
            raise KeyboardInterrupt(f"the submission was stopped; of the {len(submitted)} job(s) it had queued, "
                                    f"{cancellation(*cancel(submitted))}" if submitted else
                                    "the submission was stopped before it queued any job") from None
        finally:
            print("\n".join(lines))
        if not self.launch.dry_run:
            self._remember({**previous, **{job.name: job_id for job, job_id in ids.items()}})
        return ids

    def _sbatch(self, job: Job, script: str) -> str:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.log_dir / f"{job.name}.sbatch"
        path.write_text(script, encoding="utf-8")
        proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepError(f"sbatch refused {path}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout.strip().split(";")[0]

    # --- what was submitted before ----------------------------------------------------
    def _previous(self) -> Dict[str, str]:
        try:
            recorded = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {str(k): str(v) for k, v in recorded.items()} if isinstance(recorded, dict) else {}

    def _remember(self, ids: Dict[str, str]) -> None:
        self.record.parent.mkdir(parents=True, exist_ok=True)
        temp = self.record.with_name(f".tmp.{os.getpid()}.{self.record.name}")
        temp.write_text(json.dumps(ids, indent=1) + "\n", encoding="utf-8")
        os.replace(temp, self.record)

    # --- --wait -----------------------------------------------------------------------
    def wait(self, ids: Dict[Job, str]) -> None:
        """Follows the submitted (or still queued) jobs to their end; a job that would never
        start is cancelled and named rather than waited for."""
        console = self.launch.console
        console.log(f"waiting for {len(ids)} SLURM job(s): {', '.join(ids.values())}")
        quiet = 0  # answers in a row that list none of the jobs as not ended
        live = list(ids.values())  # those SLURM listed last
        # each job's state (scontrol's, with its restarts) once it ended: slurmctld forgets a job
        # MinJobAge (300 s by default) after its end, which can be long before the last job ends
        ended: Dict[str, str] = {}
        try:
            while True:
                listed = listed_jobs(list(ids.values()))
                for job_id, (state, _) in listed.items():
                    if state not in FINAL_STATES:
                        ended.pop(job_id, None)  # requeued
                    elif job_id not in ended:
                        ended[job_id] = job_state(job_id)
                remaining = {job_id: reason for job_id, (state, reason) in listed.items() if state not in FINAL_STATES}
                live = [job_id for job_id in ids.values() if job_id in remaining]
                # a job being requeued can be missing from one answer: the jobs have ended when two
                # answers 2 s apart list none (squeue -j of one job SLURM has forgotten is an error)
                quiet = quiet + 1 if not remaining else 0
                if quiet == 2:
                    break
                never = [(job_id, NEVER_STARTS[reason]) for job_id, reason in remaining.items()
                         if reason in NEVER_STARTS]
                for job_id, why in never:
                    console.log(f"cancelling job {job_id}: {why} (see scontrol show job {job_id})")
                if never:
                    subprocess.run(["scancel", *(job_id for job_id, _ in never)])
                time.sleep(2)
        except KeyboardInterrupt:  # Ctrl-C stops the waiting, not the jobs
            raise KeyboardInterrupt(left_running(live)) from None
        unfinished_jobs = []  # the data or a report: without them there is nothing to report
        for job, job_id in ids.items():
            state = ended.get(job_id) or job_state(job_id)
            console.log(f"job {job_id} {job.name}: {state}")
            if job.kind != "system" and not state.startswith("COMPLETED"):
                unfinished_jobs.append(f"{job.name} ({state}; {self.log_dir}/{job.name}-{job_id}.out)")
        for job in ids:
            if job.kind == "system":
                why = manifest.unfinished(job.steps)
                if why:
                    console.log(f"FAILED {job.name}: {why}")
        if unfinished_jobs:
            raise StepError(f"SLURM job(s) did not complete: {', '.join(unfinished_jobs)}")


@dataclasses.dataclass(frozen=True)
class JobEnvironment:
    """What a job's script sets up before the recipe's command: the folder the recipe's
    relative paths start from, the virtual environment it activates, the variables it exports."""

    folder: str
    venv: str
    variables: Mapping[str, str]

    @classmethod
    def here(cls, names: Sequence[str]) -> "JobEnvironment":
        """This process's: its folder, its virtual environment, and those of the variables
        ``names`` (the recipe's :attr:`Launch.environment`) that are set."""
        return cls(os.getcwd(), os.environ.get("VIRTUAL_ENV") or str(Path(sys.executable).parent.parent),
                   {name: os.environ[name] for name in names if name in os.environ})


def job_script(job: Job, launch: Launch, after: Sequence[str], environment: JobEnvironment, folder: Path,
               node_cpus: Optional[int]) -> str:
    """The sbatch script of ``job``: what it asks SLURM for (``launch.slurm``; ``node_cpus``:
    the CPUs of the partition's largest node, None where not known), the jobs it waits for
    (``after``, their ids), its log in ``folder``, and the recipe's command with ``--run-job``."""
    options = launch.slurm
    gpus = options.gpus_per_job if job.kind == "system" else 0
    nodes = options.nodes if job.kind == "system" else 1
    cpus = job_cpus(job.kind, gpus, options, launch.threads, node_cpus)
    # a training under a limit of ours requeues itself MARGIN s before it: SLURM warns it, and
    # its runner counts down from the time SLURM says it has left (run_job)
    near_limit = bool(job.trains and options.time)
    sbatch = [f"--job-name=relpos-{launch.recipe}-{job.name}", f"--output={folder}/{job.name}-%j.out",
              "--open-mode=append", f"--cpus-per-task={cpus}", f"--nodes={nodes}", "--kill-on-invalid-dep=yes"]
    if gpus:
        sbatch += [f"--gres=gpu:{gpus}", f"--ntasks-per-node={gpus}" if nodes > 1 else "--ntasks=1"]
    if options.partition:
        sbatch.append(f"--partition={options.partition}")
    if options.time:
        sbatch.append(f"--time={options.time}")
    if options.mem:
        sbatch.append(f"--mem={options.mem}")
    sbatch.append("--requeue" if job.trains else "--no-requeue")
    if near_limit:  # to the batch process, which is the recipe's runner (exec below)
        sbatch.append(f"--signal=B:USR1@{options.requeue_margin}")
    if after:
        sbatch.append(f"--dependency={'afterany' if job.after_any else 'afterok'}:{':'.join(after)}")
    sbatch += shlex.split(options.args)
    # the runner's countdown needs the limit and the margin, which job_argv leaves out with the
    # other options about submitting
    timer = ["--slurm-time", options.time, "--slurm-requeue-margin", str(options.requeue_margin)] if near_limit else []
    command = ["python", "-m", "relpos_recipes", launch.recipe, *job_argv(launch.argv), *timer, "--run-job", job.name]
    lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in sbatch),
             f"# {job.kind} job of: {launch.what()}",
             # SLURM's warning, sent once, may come before Python hears it: not fatal, and the
             # runner sets a timer from the time left as well (engine/time_limit.py)
             *(["trap '' USR1"] if near_limit else []),
             f"cd {shlex.quote(environment.folder)}",  # where the recipe's relative paths start
             f"source {shlex.quote(environment.venv)}/bin/activate",
             "export PL_ENV_READY=\"$VIRTUAL_ENV\" TQDM_DISABLE=1",
             *(f"export {name}={shlex.quote(value)}" for name, value in environment.variables.items()),
             f"exec {' '.join(shlex.quote(c) for c in command)}"]
    return "\n".join(lines) + "\n"


def job_cpus(kind: str, gpus: int, options: SlurmOptions, threads: int, node_cpus: Optional[int]) -> int:
    """The CPUs a job asks for: --slurm-cpus-per-job, or by default the recipe's ``threads``
    for the data and 4 a GPU (1 without) for a system, at most what a node has: a job that
    asks for more than any node of the partition would wait in the queue for ever."""
    if options.cpus_per_job:
        return options.cpus_per_job
    wanted = threads if kind == "prepare" else gpus * 4 if gpus else 1
    return min(wanted, node_cpus) if node_cpus else wanted


def left_running(job_ids: Sequence[str]) -> str:
    """What an interrupted --wait leaves: the jobs go on in SLURM; how to follow or cancel them."""
    if not job_ids:
        return "stopped waiting; SLURM listed none of the jobs as queued or running any more"
    return (f"stopped waiting, but the {len(job_ids)} SLURM job(s) go on ({', '.join(job_ids)}): follow them with "
            f"squeue -j {','.join(job_ids)}; cancel them with scancel {' '.join(job_ids)}; a re-run with --wait "
            "waits for them again")


def dependencies(graph: Graph, planned: Plan) -> Dict[Job, List[Job]]:
    """The jobs each job waits for: those writing what its steps read, and those its later
    part is declared to wait for."""
    owner = {step: job for job in graph.jobs for step in planned.steps_of(job)}
    found = {}
    for job in graph.jobs:
        readers = [owner[u] for step in planned.steps_of(job) for u in planned.upstream.get(step, []) if owner[u] is not job]
        found[job] = list(dict.fromkeys([*readers, *job.waits_for]))
    return found


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


def job_argv(argv: Sequence[str]) -> List[str]:
    """The recipe's arguments as a job runs them: without those about submitting."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in _SUBMISSION_OPTIONS:
            skip = "=" not in arg
            continue
        if arg in ("--wait", "--dry-run"):
            continue
        kept.append(arg)
    return kept


def cancel(job_ids: Sequence[str]) -> Tuple[Dict[str, str], Dict[str, str]]:
    """scancel ``job_ids``, then wait (at most CANCEL_SECONDS) until the controller shows each
    ended: the state of each, and scancel's reason for each it refused."""
    proc = subprocess.run(["scancel", "--verbose", *job_ids], capture_output=True, text=True)
    # scancel says why it could not cancel a job only when verbose, and exits 0 all the same
    refused = dict(re.findall(r"error on job id (\S+): (.+)", proc.stderr))
    deadline = time.monotonic() + CANCEL_SECONDS
    unsettled = (*LIVE_STATES, "COMPLETING")  # scontrol shows a cancelled job COMPLETING until its processes end
    states = {job_id: LIVE_STATES[0] for job_id in job_ids}
    while True:
        for job_id in [job_id for job_id, state in states.items() if state in unsettled]:
            states[job_id] = show_job(job_id).get("JobState", "(no longer known to slurmctld)")
        if not any(state in unsettled for state in states.values()) or time.monotonic() > deadline:
            return states, refused
        time.sleep(0.25)


def cancellation(states: Dict[str, str], refused: Dict[str, str]) -> str:
    """What became of the jobs scancel was asked to cancel (:func:`cancel`), by the state each
    ended in or still had, with scancel's reason where it refused one."""
    # a job still COMPLETING that scancel took was cancelled and is stopping; one it refused was ending by itself
    stopping = [job_id for job_id, state in states.items() if state == "COMPLETING" and job_id not in refused]
    cancelled = [job_id for job_id, state in states.items() if state == "CANCELLED"]
    cancelled += [f"{job_id} (its processes still ending)" for job_id in stopping]
    ended = [f"{job_id} {state}" for job_id, state in states.items()
             if state != "CANCELLED" and state not in LIVE_STATES and job_id not in stopping]
    live = [job_id for job_id, state in states.items() if state in LIVE_STATES]
    said = []
    if cancelled:
        said.append(f"{len(cancelled)} {'was' if len(cancelled) == 1 else 'were'} cancelled ({', '.join(cancelled)})")
    if ended:
        said.append(f"{len(ended)} had already ended ({', '.join(ended)})")
    if live:
        why = [f"{job_id}: still {states[job_id]} {CANCEL_SECONDS} s after scancel"
               + (f"; scancel: {refused[job_id]}" if job_id in refused else "") for job_id in live]
        said.append(f"{len(live)} could not be cancelled ({'; '.join(why)}): cancel them with scancel {' '.join(live)}")
    return ", ".join(said)


def time_limit_seconds(text: str) -> int:
    """sbatch's --time in seconds (slurm_seconds), or the option refused."""
    seconds = slurm_seconds(text)
    if seconds is None:
        raise StepError(f"--slurm-time: expected sbatch's time format (MINUTES, HH:MM:SS, D-HH:MM, ...), got '{text}'")
    return seconds

