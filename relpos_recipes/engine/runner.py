"""One runner for every recipe: a recipe declares its graph once (engine/graph.py) and
:func:`run` runs it here (``--launcher local``), submits it to SLURM (``--launcher slurm``),
runs one of its jobs inside SLURM (``--run-job``), or prints it (``--dry-run``), through the
executor (engine/executor.py) that its :class:`Launch` (engine/launch.py) chooses.  Every way
plans the whole graph first, so what ``--dry-run`` lists is what runs and what is submitted.
"""
from typing import Optional

from .executor import Executor, Outcome
from .graph import Graph
from .launch import Launch
from .local import LocalExecutor
from .slurm import SlurmExecutor


def executor_for(launch: Launch) -> Executor:
    """The SLURM executor for ``--launcher slurm`` and for a job inside SLURM (``--run-job``),
    the local one otherwise."""
    return SlurmExecutor(launch) if launch.on_slurm else LocalExecutor(launch)


def run(graph: Graph, launch: Launch) -> Optional[Outcome]:
    """Runs, submits, runs one job of, or prints ``graph`` as ``launch`` says."""
    return executor_for(launch).run(graph)
