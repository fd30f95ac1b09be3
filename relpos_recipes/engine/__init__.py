"""The step engine: steps and their manifests, the local runner, the SLURM submitter and the
console (docs/reproducing.md explains it)."""
from .console import Console, ProgressConsole
from .core import (FolderLock, LocalExecutor, Out, OutDir, Outcome, Step, StepError, Tool, describe, merged, plan,
                   read_manifest)

__all__ = ["Console", "FolderLock", "LocalExecutor", "Out", "OutDir", "Outcome", "ProgressConsole", "Step",
           "StepError", "Tool", "describe", "merged", "plan", "read_manifest"]
