"""The environment variables that steer the recipes: read in one place
(relpos_recipes.graphs.environment), into one typed object, and every one of them handed to a
recipe's SLURM jobs."""
import ast
from pathlib import Path

from relpos_recipes.graphs.environment import RECIPE_ENVIRONMENT, RecipeEnvironment

GRAPHS = Path(__file__).resolve().parents[2] / "relpos_recipes" / "graphs"


class Recording(dict):
    def __init__(self, values):
        super().__init__(values)
        self.asked = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)


def test_the_variables_are_read_into_one_typed_object():
    environ = Recording({"SMOKE": "1", "SMOKE_DATA": "/data/small", "TRAIN_EXTRA_ARGS": "--user-dir 'my plugin' --fp16",
                         "REPORT_EXTRA_ARGS": "--metrics bleu", "RELPOS_ARCH_OVERRIDE": "transformer_rope",
                         "SKIP_REPORT": "1"})
    assert RecipeEnvironment.read(environ) == RecipeEnvironment(
        smoke=True, smoke_data=Path("/data/small"), train_extra_args=("--user-dir", "my plugin", "--fp16"),
        report_extra_args=("--metrics", "bleu"), report_tokenize="13a", arch_override="transformer_rope",
        skip_report=True)
    assert environ.asked <= set(RECIPE_ENVIRONMENT), environ.asked - set(RECIPE_ENVIRONMENT)
    assert RecipeEnvironment.read({}) == RecipeEnvironment()
    assert not RecipeEnvironment.read({"SMOKE": "0", "SKIP_REPORT": "yes"}).smoke


def test_no_graph_reads_a_steering_variable_itself():
    steering = set(RECIPE_ENVIRONMENT) - {"OMP_NUM_THREADS"}  # a training's threads: read where it starts
    for path in GRAPHS.glob("*.py"):
        if path.name == "environment.py":
            continue
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(call, ast.Call) and "environ" in ast.unparse(call.func):
                names = {arg.value for arg in call.args if isinstance(arg, ast.Constant)}
                assert not names & steering, (path.name, ast.unparse(call))
