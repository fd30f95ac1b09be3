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
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import manifest
from .graph import Graph, Job
from .local import LocalRunner, Outcome, TimeLimit
from .lock import FolderLock
from .plan import Plan, plan
from .runner import Launch, check_manifests, unfinished
from .step import StepError

# the environment that changes what a recipe does, handed to its jobs
RECIPE_ENVIRONMENT = ("SMOKE", "SMOKE_DATA", "TRAIN_EXTRA_ARGS", "REPORT_TOKENIZE", "REPORT_EXTRA_ARGS",
                      "RELPOS_ARCH_OVERRIDE", "SKIP_REPORT", "OMP_NUM_THREADS")
# squeue's reasons for a pending job that will never start, with why
UNRUNNABLE = "SLURM will never start it ({}: it asks for more than the partition gives)"
NEVER_STARTS = {"DependencyNeverSatisfied": "a job it waits for failed",
                **{reason: UNRUNNABLE.format(reason) for reason in
                   ("PartitionConfig", "BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit")}}
LIVE_STATES = ("PENDING", "RUNNING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED")
# the states in which SLURM, not the job's own commands, ended a job
ENDED_BY_SLURM = ("CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE", "BOOT_FAIL")
FINAL_STATES = ("COMPLETED", "FAILED", *ENDED_BY_SLURM)
# how long a cancellation waits for the controller to show the jobs ended
CANCEL_SECONDS = 10
# how long a submission waits for a job of the last one to end or be requeued (SLURM's KillWait is 30 s by default)
SETTLE_SECONDS = 60
# the recipe options about submitting, which a job's own command line does not take
_SUBMISSION_OPTIONS = {"--launcher", "--slurm-partition", "--slurm-gpus-per-job", "--slurm-cpus-per-job", "--slurm-nodes",
                       "--slurm-time", "--slurm-mem", "--slurm-args", "--slurm-requeue-margin"}


def log_dir(graph: Graph) -> Path:
    return Path(graph.roots[-1]) / "slurm"


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
            check_manifests(self.graph.roots)
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
        ids: Dict[Job, str] = {}
        submitted: List[str] = []
        lines = []
        try:
            for job in _in_order(self.graph.jobs, depends):
                if not planned.job_runs(job):
                    lines.append(f"[done] {job.name}")
                    continue
                queued = previous.get(job.name)
                state, reason = queue_state(queued) if queued and not self.launch.dry_run else (None, None)
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
                script = self.script(job, after)
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
        finally:
            print("\n".join(lines))
        if not self.launch.dry_run:
            self._remember({**previous, **{job.name: job_id for job, job_id in ids.items()}})
        return ids

    # --- the job script ---------------------------------------------------------------
    def script(self, job: Job, after: Sequence[str]) -> str:
        options, launch = self.options, self.launch
        gpus = options.gpus_per_job if job.kind == "system" else 0
        nodes = options.nodes if job.kind == "system" else 1
        cpus = self._cpus(job.kind, gpus)
        sbatch = [f"--job-name=relpos-{launch.recipe}-{job.name}", f"--output={self.log_dir}/{job.name}-%j.out",
                  "--open-mode=append", f"--cpus-per-task={cpus}", f"--nodes={nodes}", "--kill-on-invalid-dep=yes"]
        if gpus:
            sbatch += [f"--gres=gpu:{gpus}", f"--ntasks-per-node={gpus}" if nodes > 1 else "--ntasks=1"]
        if options.partition:
            sbatch.append(f"--partition={options.partition}")
        if options.time:
            sbatch.append(f"--time={options.time}")
        if options.mem:
            sbatch.append(f"--mem={options.mem}")
        if job.trains:
            sbatch.append("--requeue")
            if options.time:
                # to the batch process, which is the recipe's runner (exec below)
                sbatch.append(f"--signal=B:USR1@{options.requeue_margin}")
        else:
            sbatch.append("--no-requeue")
        if after:
            sbatch.append(f"--dependency={'afterany' if job.after_any else 'afterok'}:{':'.join(after)}")
        sbatch += shlex.split(options.args)
        environment = {name: os.environ[name] for name in RECIPE_ENVIRONMENT if name in os.environ}
        command = ["python", "-m", "relpos_recipes", launch.recipe, *job_argv(launch.argv), "--run-job", job.name]
        venv = os.environ.get("VIRTUAL_ENV") or str(Path(sys.executable).parent.parent)
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in sbatch),
                 f"# {job.kind} job of: {launch.what()}",
                 f"cd {shlex.quote(os.getcwd())}",  # where the recipe's relative paths start
                 f"source {shlex.quote(venv)}/bin/activate",
                 "export PL_ENV_READY=\"$VIRTUAL_ENV\" TQDM_DISABLE=1",
                 *(f"export {name}={shlex.quote(value)}" for name, value in environment.items()),
                 f"exec {' '.join(shlex.quote(c) for c in command)}"]
        return "\n".join(lines) + "\n"

    def _cpus(self, kind: str, gpus: int) -> int:
        """The CPUs a job asks for: --slurm-cpus-per-job, or by default the recipe's threads
        for the data and 4 a GPU (1 without) for a system, at most what a node has: a job
        that asks for more than any node of the partition would wait in the queue for ever."""
        if self.options.cpus_per_job:
            return self.options.cpus_per_job
        wanted = self.launch.threads if kind == "prepare" else gpus * 4 if gpus else 1
        return min(wanted, self.node_cpus) if self.node_cpus else wanted

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
                proc = subprocess.run(["squeue", "-h", "--states", "all", "-j", ",".join(ids.values()), "-o",
                                       "%i %T %r"], capture_output=True, text=True)
                listed = [line.split() for line in proc.stdout.splitlines() if line.strip()]
                for job_id, state, *_ in listed:
                    if state not in FINAL_STATES:
                        ended.pop(job_id, None)  # requeued
                    elif job_id not in ended:
                        ended[job_id] = job_state(job_id)
                remaining = [fields for fields in listed if fields[1] not in FINAL_STATES]
                live = [job_id for job_id in ids.values() if any(fields[0] == job_id for fields in remaining)]
                # a job being requeued can be missing from one answer: the jobs have ended when two
                # answers 2 s apart list none (squeue -j of one job SLURM has forgotten is an error)
                quiet = quiet + 1 if not remaining else 0
                if quiet == 2:
                    break
                never = [(fields[0], NEVER_STARTS[fields[-1]]) for fields in remaining if fields[-1] in NEVER_STARTS]
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
                why = unfinished(job.steps)
                if why:
                    console.log(f"FAILED {job.name}: {why}")
        if unfinished_jobs:
            raise StepError(f"SLURM job(s) did not complete: {', '.join(unfinished_jobs)}")


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


def queue_state(job_id: str):
    """(state, reason) of a queued job, or (None, None) once SLURM has forgotten it.  A job
    COMPLETING is ending, or being requeued (scontrol requeue, preemption) and about to be
    PENDING again: it is asked again, for at most SETTLE_SECONDS, until SLURM shows which."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        proc = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T %r"], capture_output=True, text=True)
        fields = proc.stdout.split()
        state, reason = (fields[0], fields[-1]) if proc.returncode == 0 and fields else (None, None)
        if state != "COMPLETING" or time.monotonic() > deadline:
            return state, reason
        time.sleep(0.5)


def largest_node_cpus(partition: Optional[str]) -> Optional[int]:
    """The CPUs of the partition's largest node (the default partition's without one), or
    None where sinfo does not say."""
    counts = [int(fields[0]) for fields in _sinfo("%c %P", partition) if fields[0].isdigit()]
    return max(counts) if counts else None


def partition_has_gpus(partition: Optional[str]) -> Optional[bool]:
    """Whether any node of the partition has a GPU resource (None where sinfo does not say)."""
    nodes = _sinfo("%G %P", partition)
    return any("gpu" in fields[0] for fields in nodes) if nodes else None


def _sinfo(fields: str, partition: Optional[str]) -> List[List[str]]:
    try:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", fields, *(["-p", partition] if partition else [])],
                              capture_output=True, text=True)
    except OSError:  # no SLURM here: a --dry-run elsewhere
        return []
    rows = [line.split() for line in proc.stdout.splitlines()]
    return [row for row in rows if len(row) == 2 and (partition or row[1].endswith("*"))] if proc.returncode == 0 else []


def job_state(job_id: str) -> str:
    """A finished job's state, from scontrol (sacct needs accounting, which a small
    cluster may not have)."""
    fields = show_job(job_id)
    state = fields.get("JobState", "(no longer known to slurmctld)")
    restarts = fields.get("Restarts", "0")
    return state + (f", restarted {restarts}x" if restarts != "0" else "")


def show_job(job_id: str) -> Dict[str, str]:
    """scontrol's fields of a job ({} once slurmctld has forgotten it, or where no SLURM answers)."""
    try:
        proc = subprocess.run(["scontrol", "--oneliner", "show", "job", job_id], capture_output=True, text=True)
    except OSError:
        return {}
    return dict(re.findall(r"(\w+)=(\S*)", proc.stdout)) if proc.returncode == 0 else {}


def ended_by_slurm(record: Optional[manifest.Record]) -> Optional[str]:
    """Why a step's unfinished run ended where SLURM ended the job it ran in ("SLURM ended
    its job 70: CANCELLED"): the step's own last words then are only where it was stopped.
    None where SLURM did not, or no SLURM says."""
    if record is None or record.status == "done" or not record.job_id:
        return None
    state = show_job(record.job_id).get("JobState")
    return f"SLURM ended its job {record.job_id}: {state}" if state in ENDED_BY_SLURM else None


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
    """sbatch's --time in seconds: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS,
    DAYS-HOURS:MINUTES or DAYS-HOURS:MINUTES:SECONDS."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not match:
        raise StepError(f"--slurm-time: expected sbatch's time format (MINUTES, HH:MM:SS, D-HH:MM, ...), got '{text}'")
    days, first, second, third = match.groups()
    if days is not None:  # D-H, D-H:M, D-H:M:S
        return ((int(days) * 24 + int(first)) * 60 + int(second or 0)) * 60 + int(third or 0)
    if third is not None:  # H:M:S
        return (int(first) * 60 + int(second)) * 60 + int(third)
    return int(first) * 60 + int(second or 0)  # M, M:S

