"""The recipes behind scripts/*.sh, as graphs of steps that one engine runs (recipes.engine).

``python -m relpos_recipes NAME ARGS`` is what each script runs after setting up the environment;
``docs/reproducing.md`` explains the engine, a step and its manifest, and how to add a recipe.
"""
