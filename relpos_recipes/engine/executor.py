"""Where a graph's steps run: the interface the local executor (local.py) and the SLURM
executor (slurm.py) implement, and what a run returns.  runner.py chooses one of them for a
recipe's command line; they build on this module, never on the runner."""
import abc
from typing import Dict, List, Optional

from .graph import Graph, Job
from .launch import Launch
from .step import Step


class Outcome:
    """What became of each step of a run: ran, skipped (done), failed (with the error) or
    blocked (by a failed step upstream); and the jobs whose later part could not be built."""

    def __init__(self):
        self.ran: List[Step] = []
        self.skipped: List[Step] = []
        self.failed: Dict[Step, str] = {}
        self.blocked: Dict[Step, Step] = {}  # step -> the failed step upstream
        self.blocked_jobs: Dict[Job, Step] = {}

    def finished(self, step: Step) -> bool:
        return step in self.failed or step in self.blocked or step in self.ran or step in self.skipped

    def error_of(self, step: Step) -> Optional[str]:
        culprit = self.blocked.get(step, step)
        return self.failed.get(culprit)


class Executor(abc.ABC):
    """Runs a recipe's graph as its :class:`Launch` says, planned whole first: what a dry
    run lists is what runs."""

    def __init__(self, launch: Launch):
        self.launch = launch

    @abc.abstractmethod
    def run(self, graph: Graph) -> Optional[Outcome]:
        """Runs (or prints, or submits) ``graph``: what became of its steps, where it ran to its
        end here; None where it only printed or submitted them."""
