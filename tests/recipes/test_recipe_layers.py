"""The recipes are leaves, read from their source: a recipe (a module of relpos_recipes.graphs
behind a command of relpos_recipes.__main__.RECIPES) builds on the graphs' shared blocks, and
no module of the graphs, another recipe or a block, imports it."""
from conftest import REPO_ROOT, imported
from relpos_recipes.__main__ import RECIPES

GRAPHS = REPO_ROOT / "relpos_recipes" / "graphs"
PACKAGE = "relpos_recipes.graphs"
# modules behind commands that are also blocks: the preparations, train.sh and translate.sh
BLOCKS = {"prepare", "training"}


def test_no_module_of_the_graphs_imports_a_recipe():
    recipes = {f"{PACKAGE}.{module}" for module, *_ in RECIPES.values() if module not in BLOCKS}
    assert {f"{PACKAGE}.{name}" for name in ("demo", "leaderboard", "bands", "scan", "study")} <= recipes
    found = {path.name: sorted(imported(path, PACKAGE) & recipes) for path in GRAPHS.glob("*.py")}
    assert {name: modules for name, modules in found.items() if modules} == {}
