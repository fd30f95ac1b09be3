"""The step engine: a recipe is a graph of steps (step.py, graph.py), each with one manifest
(manifest.py) that decides what is done (plan.py); one runner (runner.py) hands the graph to
the executor (executor.py) its launch (launch.py) chooses: here (local.py, each step under
guard.py) or on SLURM (slurm.py, asking the controller through slurm_queue.py); the console
(console.py) shows it.  docs/reproducing.md explains it in a page."""
from .console import Console, ProgressConsole
from .graph import Graph, Job, Later, unique_steps
from .lock import FolderLock
from .launch import DEFAULT_THREADS, Launch, add_launcher_options
from .manifest import unfinished
from .runner import run
from .step import Display, Out, OutDir, Policy, ProgressFormat, Resources, Step, StepError, Tool

__all__ = ["Console", "DEFAULT_THREADS", "Display", "FolderLock", "Graph", "Job", "Launch", "Later", "Out", "OutDir",
           "Policy", "ProgressConsole", "ProgressFormat", "Resources", "Step", "StepError", "Tool",
           "add_launcher_options", "run", "unfinished", "unique_steps"]
