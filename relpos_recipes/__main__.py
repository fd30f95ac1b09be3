"""python -m relpos_recipes NAME [options]: the recipe behind scripts/NAME.sh."""
import importlib
import sys

from .engine import StepError, time_limit

if "--run-job" in sys.argv:  # a SLURM job: its time-limit warning is heard from here on
    time_limit.listen()

# each recipe's module and function (imported when run: the others' imports are not paid for)
RECIPES = {
    "prepare-wmt19-de-en": ("prepare", "prepare_wmt", "de-en"),
    "prepare-wmt19-zh-en": ("prepare", "prepare_wmt", "zh-en"),
    "prepare-toy": ("prepare", "prepare_toy"),
    "prepare-tatoeba": ("prepare", "prepare_tatoeba"),
    "prepare-corpus": ("prepare", "prepare_corpus"),
    "build-test-sets": ("prepare", "build_test_sets"),
    "train": ("training", "train_main"),
    "translate": ("training", "translate_main"),
    "demo": ("demo", "demo_main"),
    "leaderboard": ("leaderboard", "leaderboard_main"),
    **{f"table{n}": ("study", "table_main", n) for n in range(1, 6)},
    "tatoeba": ("study", "tatoeba_main"),
    "bands": ("bands", "bands_main"),
    "scan": ("scan", "scan_main"),
}


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in RECIPES:
        print(f"usage: python -m relpos_recipes {{{','.join(RECIPES)}}} [options]", file=sys.stderr)
        return 2
    module, function, *fixed = RECIPES[argv[0]]
    recipe = getattr(importlib.import_module(f"relpos_recipes.graphs.{module}"), function)
    try:
        return recipe(*fixed, argv[1:])
    except StepError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupted:  # with what it left running where it says (a SLURM --wait)
        print("interrupted: " + (str(interrupted) or "the steps that were running were stopped; a re-run goes on "
                                                     "from there"), file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
