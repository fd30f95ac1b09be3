"""What the SLURM controller says: the state of jobs (one ``squeue`` call for all of them;
``scontrol`` for a job that ended) and what a partition's nodes have (``sinfo``).  No
submission here: slurm.py submits and follows jobs through these answers."""
import re
import subprocess
import time
from typing import Dict, List, Optional, Sequence, Tuple

# squeue's reasons for a pending job that will never start, with why
UNRUNNABLE = "SLURM will never start it ({}: it asks for more than the partition gives)"
NEVER_STARTS = {"DependencyNeverSatisfied": "a job it waits for failed",
                **{reason: UNRUNNABLE.format(reason) for reason in
                   ("PartitionConfig", "BadConstraints", "PartitionNodeLimit", "PartitionTimeLimit")}}
LIVE_STATES = ("PENDING", "RUNNING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED")
# the states in which SLURM, not the job's own commands, ended a job
ENDED_BY_SLURM = ("CANCELLED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "DEADLINE", "BOOT_FAIL")
FINAL_STATES = ("COMPLETED", "FAILED", *ENDED_BY_SLURM)
# how long a submission waits for a job of the last one to end or be requeued (SLURM's KillWait is 30 s by default)
SETTLE_SECONDS = 60


QUEUE_FORMAT = "%i %T %r"  # job id, state, reason: the fields parse_queue reads


def parse_queue(text: str) -> Dict[str, Tuple[str, str]]:
    """squeue's answer in QUEUE_FORMAT as {job id: (state, reason)}, in its order."""
    listed = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            listed[fields[0]] = (fields[1], fields[-1])
    return listed


def listed_jobs(job_ids: Sequence[str]) -> Dict[str, Tuple[str, str]]:
    """The (state, reason) of those of ``job_ids`` that SLURM still knows, from one squeue
    call for all of them ({} where squeue answers with an error: ``squeue -j`` of one job that
    SLURM has forgotten is one)."""
    proc = subprocess.run(["squeue", "-h", "--states", "all", "-j", ",".join(job_ids), "-o", QUEUE_FORMAT],
                          capture_output=True, text=True)
    return parse_queue(proc.stdout) if proc.returncode == 0 else {}


def queue_states(job_ids: Sequence[str]) -> Dict[str, Tuple[Optional[str], Optional[str]]]:
    """(state, reason) of each queued job, (None, None) for one SLURM has forgotten.  A job
    COMPLETING is ending, or being requeued (scontrol requeue, preemption) and about to be
    PENDING again: the jobs are asked again, for at most SETTLE_SECONDS, until SLURM shows
    which."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        listed = listed_jobs(job_ids)
        states = {job_id: listed.get(job_id, (None, None)) for job_id in job_ids}
        if all(state != "COMPLETING" for state, _ in states.values()) or time.monotonic() > deadline:
            return states
        time.sleep(0.5)


def time_left(job_id: str) -> Optional[int]:
    """The seconds SLURM gives the running job ``job_id`` before its time limit, from squeue's
    %L (D-HH:MM:SS with the leading parts left out; None for a job without a limit, or where
    squeue does not answer)."""
    try:
        proc = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%L"], capture_output=True, text=True)
    except OSError:
        return None
    return slurm_seconds(proc.stdout) if proc.returncode == 0 else None


def slurm_seconds(text: str) -> Optional[int]:
    """SLURM's time format in seconds, as sbatch's --time takes it and squeue's %L writes it:
    MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES or
    DAYS-HOURS:MINUTES:SECONDS; None for anything else (UNLIMITED, NOT_SET, INVALID, nothing)."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not match:
        return None
    days, first, second, third = match.groups()
    if days is not None:  # D-H, D-H:M, D-H:M:S
        return ((int(days) * 24 + int(first)) * 60 + int(second or 0)) * 60 + int(third or 0)
    if third is not None:  # H:M:S
        return (int(first) * 60 + int(second)) * 60 + int(third)
    return int(first) * 60 + int(second or 0)  # M, M:S


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
