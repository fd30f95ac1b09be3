"""A recipe's graph as its command line builds it, in-process: the recipe's function parses
the options and builds the graph as `bash scripts/NAME.sh ... --dry-run` does, and the run
it hands the graph to keeps it instead of planning or running it.  Tests assert on the graph
and its plan (which steps, what enters their identities, which later parts) rather than on
the dry run's printout, in a second or two instead of an interpreter and a bash each."""
import importlib

from relpos_recipes.__main__ import RECIPES
from relpos_recipes.engine import Graph


def recipe_graph(monkeypatch, name: str, *argv, dry_run: bool = True) -> Graph:
    """The graph `python -m relpos_recipes NAME ARGV --dry-run` would plan (without --dry-run
    where ``dry_run`` is False: what a run would run), its architectures taken as known
    (asking fairseq costs an interpreter; the refusals of unknown ones are tested through the
    scripts).  A refusal before the graph is built raises its StepError."""
    module, function, *fixed = RECIPES[name]
    recipe = importlib.import_module(f"relpos_recipes.graphs.{module}")
    graphs = []
    monkeypatch.setattr(recipe, "run", lambda graph, launch: graphs.append(graph))
    if hasattr(recipe, "check_archs"):
        monkeypatch.setattr(recipe, "check_archs", lambda option, archs: None)
    assert getattr(recipe, function)(*fixed, [*map(str, argv), *(["--dry-run"] if dry_run else [])]) == 0
    (graph,) = graphs
    return graph


def steps_named(graph: Graph, name: str):
    return [step for job in graph.jobs for step in job.steps if step.name == name]


def words(step) -> str:
    """The step's command, one string: what a reader of the dry run sees."""
    return " ".join(step.argv())
