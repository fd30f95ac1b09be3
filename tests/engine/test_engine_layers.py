"""The engine's layers, read from its source: it imports neither the recipes' graphs, their
tools nor the analysis package, and no module of it imports one that imports it back (an
executor builds on the runner's parts, the runner on the executors, never the reverse)."""
from typing import Dict, List

from conftest import REPO_ROOT, imported

ENGINE = REPO_ROOT / "relpos_recipes" / "engine"
PACKAGE = "relpos_recipes.engine"
FOREIGN = ("relpos_recipes.graphs", "relpos_recipes.tools", "relpos_analysis")


def engine_graph() -> Dict[str, List[str]]:
    """Each engine module -> the engine modules it imports (the package itself not counted)."""
    modules = {f"{PACKAGE}.{path.stem}": path for path in ENGINE.glob("*.py") if path.stem != "__init__"}
    return {name: sorted(m for m in imported(path, PACKAGE) if m in modules and m != name)
            for name, path in modules.items()}


def test_the_engine_imports_neither_the_recipes_their_tools_nor_the_analysis():
    found = {path.name: sorted(m for m in imported(path, PACKAGE) if m.startswith(FOREIGN))
             for path in ENGINE.glob("*.py")}
    assert {name: modules for name, modules in found.items() if modules} == {}


def test_no_module_of_the_engine_imports_one_that_imports_it_back():
    graph = engine_graph()
    state: Dict[str, str] = {}

    def visit(module: str, chain: List[str]):
        if state.get(module) == "done":
            return
        assert state.get(module) != "visiting", "an import circle: " + " -> ".join(chain + [module])
        state[module] = "visiting"
        for other in graph[module]:
            visit(other, chain + [module])
        state[module] = "done"

    for module in graph:
        visit(module, [])
    # the runner chooses among the executors, which do not know it
    assert f"{PACKAGE}.runner" not in {m for imports in graph.values() for m in imports}
    assert {f"{PACKAGE}.local", f"{PACKAGE}.slurm"} <= set(graph[f"{PACKAGE}.runner"])
