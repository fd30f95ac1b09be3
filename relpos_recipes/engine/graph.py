"""A recipe's graph, declared once: jobs of steps, and where a later part depends on what an
earlier step decides, an explicit re-plan point.

A **job** is steps that run together: one SLURM job, or, locally, steps the runner starts as
they become ready.  A job's :class:`Later` part is a re-plan point: steps that can only be
built from what earlier steps wrote (the leaderboard's other seeds, at the learning rate its
choice step chose; a report that lists the systems that failed).  The runner builds them once
the job's own steps and the jobs it ``waits_for`` have finished: locally it re-plans then and
goes on; on SLURM the job boundary is the re-plan point, and the job builds them when it runs.
"""
import dataclasses
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from .step import Step


@dataclasses.dataclass(frozen=True)
class Later:
    """Steps built from what earlier steps wrote; ``title`` says what they are before then,
    and ``preview``, where the steps can be foreseen (a report, if every system finishes),
    shows them in a dry run."""

    build: Callable[[], Sequence[Step]]
    title: str
    preview: Optional[Callable[[], Sequence[Step]]] = None


@dataclasses.dataclass(eq=False)
class Job:
    name: str  # unique in the graph; a file name
    steps: Sequence[Step] = ()
    later: Optional[Later] = None
    # besides the jobs writing what its steps read: the jobs its later steps read from
    waits_for: Sequence["Job"] = ()
    kind: str = "system"  # prepare | system | report: what SLURM gives it, what --wait requires
    # its steps run whatever became of the jobs before it (a report of failed systems)
    after_any: bool = False

    @property
    def trains(self) -> bool:
        return any(step.in_place for step in self.steps)


@dataclasses.dataclass
class Graph:
    """A recipe's jobs.  ``roots``: the folders the run writes in (locked while it runs; SLURM
    logs in the last one's ``slurm/``); ``keep_going``: a failed step stops only what depends
    on it (the leaderboard), not the run."""

    jobs: List[Job]
    roots: Sequence[Path]
    keep_going: bool = False

    def __post_init__(self):
        names = [job.name for job in self.jobs]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"jobs named more than once: {', '.join(repeated)}")

    def job(self, name: str) -> Optional[Job]:
        return next((job for job in self.jobs if job.name == name), None)

    def step_jobs(self) -> Dict[Step, Job]:
        return {step: job for job in self.jobs for step in job.steps}


def unique_steps(*groups: Sequence[Step]) -> List[Step]:
    """The steps of several groups as one: a step that two of them declare (the same manifest,
    identity and outputs: a test set two recipes both need) is kept once."""
    kept: Dict[Path, Step] = {}
    for step in (s for group in groups for s in group):
        key = step.manifest_key
        other = kept.setdefault(key, step)
        if other is not step and (other.recorded_identity() != step.recorded_identity()
                                  or other.outputs != step.outputs):
            raise ValueError(f"two different steps {step.name!r} share {step.manifest_path}")
    return list(kept.values())
