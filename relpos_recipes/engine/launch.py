"""How a recipe's command line asks its graph to run: here or on SLURM, with which options
(:class:`Launch`, from the options :func:`add_launcher_options` adds to a recipe's parser)."""
import argparse
import dataclasses
import os
import shlex
from typing import Optional, Sequence

from .console import Console

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
    # the environment variables that change what the recipe does, handed to its SLURM jobs
    environment: Sequence[str] = ()

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
