"""One runner for every recipe: a recipe declares its graph once (engine/graph.py) and
:func:`run` runs it here (``--launcher local``), submits it to SLURM (``--launcher slurm``),
runs one of its jobs inside SLURM (``--run-job``), or prints it (``--dry-run``).  Every way
plans the whole graph first, so what ``--dry-run`` lists is what runs and what is submitted.
"""
import argparse
import dataclasses
import os
import shlex
from pathlib import Path
from typing import Optional, Sequence

from . import manifest
from .console import Console
from .graph import Graph
from .local import LocalRunner, Outcome
from .lock import FolderLock
from .plan import plan
from .step import MANIFEST_DIR, Step

DEFAULT_THREADS = os.cpu_count() or 1


def _count(what: str, minimum: int):
    def convert(text: str) -> int:
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got '{text}'")
        return int(text)

    convert.__name__ = what
    return convert


@dataclasses.dataclass
class SlurmOptions:
    partition: Optional[str] = None
    gpus_per_job: int = 1
    cpus_per_job: Optional[int] = None
    nodes: int = 1
    time: Optional[str] = None
    mem: Optional[str] = None
    args: str = ""
    max_requeues: int = 3
    requeue_margin: int = 180  # seconds before --slurm-time at which a training requeues itself


def add_launcher_options(parser) -> None:
    parser.add_argument("--launcher", choices=("local", "slurm"), default="local")
    parser.add_argument("--slurm-partition")
    parser.add_argument("--slurm-gpus-per-job", type=_count("a number of GPUs (0 for none)", 0), default=1)
    parser.add_argument("--slurm-cpus-per-job", type=_count("a positive integer", 1))
    parser.add_argument("--slurm-nodes", type=_count("a positive integer", 1), default=1)
    parser.add_argument("--slurm-time")
    parser.add_argument("--slurm-mem")
    parser.add_argument("--slurm-args", default="")
    parser.add_argument("--slurm-max-requeues", type=_count("a number of requeues (0 for none)", 0), default=3)
    parser.add_argument("--slurm-requeue-margin", type=_count("a number of seconds", 1), default=180)
    parser.add_argument("--jobs-per-gpu", type=_count("a positive integer", 1))
    parser.add_argument("--wait", action="store_true")
    parser.add_argument("--run-job", help=argparse.SUPPRESS)


@dataclasses.dataclass
class Launch:
    """Where and how a recipe's command line runs its graph."""

    recipe: str  # python -m relpos_recipes NAME
    argv: Sequence[str]  # its arguments, handed to its SLURM jobs
    dry_run: bool = False
    threads: int = DEFAULT_THREADS
    gpus: int = 0
    jobs_per_gpu: Optional[int] = None  # steps sharing a GPU at a time (None: as many as the cores allow)
    launcher: str = "local"
    slurm: SlurmOptions = dataclasses.field(default_factory=SlurmOptions)
    wait: bool = False
    run_job: Optional[str] = None
    console: Console = dataclasses.field(default_factory=Console)

    @classmethod
    def from_args(cls, recipe: str, argv: Sequence[str], args, **fields) -> "Launch":
        """A Launch from a recipe's parsed options (those of :func:`add_launcher_options`,
        where it has them)."""
        slurm = SlurmOptions(
            partition=getattr(args, "slurm_partition", None), gpus_per_job=getattr(args, "slurm_gpus_per_job", 1),
            cpus_per_job=getattr(args, "slurm_cpus_per_job", None), nodes=getattr(args, "slurm_nodes", 1),
            time=getattr(args, "slurm_time", None), mem=getattr(args, "slurm_mem", None),
            args=getattr(args, "slurm_args", ""), max_requeues=getattr(args, "slurm_max_requeues", 3),
            requeue_margin=getattr(args, "slurm_requeue_margin", 180))
        return cls(recipe=recipe, argv=list(argv), dry_run=getattr(args, "dry_run", False),
                   launcher=getattr(args, "launcher", "local"), slurm=slurm, wait=getattr(args, "wait", False),
                   jobs_per_gpu=getattr(args, "jobs_per_gpu", None),
                   run_job=getattr(args, "run_job", None), **fields)

    @property
    def on_slurm(self) -> bool:
        return self.launcher == "slurm" or self.run_job is not None

    @property
    def finishes_here(self) -> bool:
        """Whether this command ends with the graph run (locally, or on SLURM with --wait),
        so that it can print what the run made."""
        return not self.dry_run and not self.run_job and (self.launcher == "local" or self.wait)

    def what(self) -> str:
        return " ".join(shlex.quote(a) for a in ["python", "-m", "relpos_recipes", self.recipe, *self.argv])


def run(graph: Graph, launch: Launch) -> Optional[Outcome]:
    """Runs, submits, runs one job of, or prints ``graph`` as ``launch`` says."""
    if launch.run_job:
        from .slurm import run_job

        return run_job(graph, launch)
    if launch.launcher == "slurm":
        from .slurm import Submitter

        Submitter(graph, launch).submit()
        return None
    if launch.dry_run:
        check_manifests(graph.roots)
        print(plan(graph).describe())
        return None
    with FolderLock(graph.roots, launch.what()):
        check_manifests(graph.roots)
        return LocalRunner(launch.threads, launch.gpus, launch.console, jobs_per_gpu=launch.jobs_per_gpu).run(graph)


def check_manifests(roots: Sequence[Path]) -> None:
    """Reads every step manifest under the run's folders before any work: a damaged one
    stops the run at its start, naming it, not after hours of training."""
    for root in roots:
        for directory, subdirs, _files in os.walk(root):
            if MANIFEST_DIR in subdirs:
                for path in sorted((Path(directory) / MANIFEST_DIR).glob("*.json")):
                    manifest.read(path)
            subdirs[:] = [d for d in subdirs if d != MANIFEST_DIR and not d.startswith(".tmp.")]


def unfinished(steps: Sequence[Step]) -> Optional[str]:
    """Why the first of ``steps`` that did not finish did not: SLURM's state where SLURM ended
    the job it ran in, the error its manifest records, or that it did not run to its end;
    None when all finished."""
    from .slurm import ended_by_slurm  # slurm.py builds on this module

    for step in steps:
        record = manifest.of(step)
        ended = ended_by_slurm(record)
        if ended:
            return f"{step.description}: {ended} (see {step.log_path})"
        if record and record.status == "failed":
            return record.error or "failed"
        if not (record and record.status == "done") or not all(p.exists() for p in step.outputs):
            return f"{step.description} did not finish (see {step.log_path})"
    return None
