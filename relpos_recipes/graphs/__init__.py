"""The recipes' graphs: each recipe (a script of scripts/) declares its steps here, and the
engine (relpos_recipes.engine) runs them.  A step runs a tool by its symbolic name
(relpos_recipes.tools.COMMANDS), fairseq's or subword-nmt's commands."""
import sys

from ..engine.step import Tool
from ..tools import COMMANDS

PY = sys.executable


def tool(name: str) -> Tool:
    """The tool ``name`` as a step's command starts: ``python -m MODULE [SUBCOMMAND]``,
    recorded in manifests as ``{tool:NAME}``."""
    module, *subcommand = COMMANDS[name]
    return Tool(name, (PY, "-m", module, *subcommand))
