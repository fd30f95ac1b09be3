"""The tools the recipes' steps run: each an importable module with a command line,
``python -m relpos_recipes.tools.MODULE [SUBCOMMAND] ...``.

A tool writes exactly the outputs it is given (the engine hands it temporary names and
renames them when it succeeds) and fails with ``error: ...`` naming the file at fault.

``COMMANDS`` names each tool symbolically: a step records ``{tool:NAME}`` instead of the
module's path, so that moving a tool to another module changes no step's identity and redoes
no work.
"""
from typing import Dict, NoReturn, Optional, Sequence, Tuple

# symbolic name -> (module under relpos_recipes.tools, its subcommand if it has several)
COMMANDS: Dict[str, Tuple[str, ...]] = {
    "corpora": ("corpora",),
    "tatoeba": ("tatoeba",),
    "toy-corpus": ("toy_corpus",),
    "filter-pairs": ("filter_pairs",),
    "spm": ("spm",),
    "binarize": ("binarize",),
    "textproc": ("text", "textproc"),
    "concat-lines": ("text", "concat-lines"),
    "longer-side": ("text", "longer-side"),
    "cut-lines": ("text", "cut-lines"),
    "deseg": ("text", "deseg"),
    "write-env": ("text", "write-env"),
    "testset-meta": ("text", "testset-meta"),
    "train": ("fairseq_train",),
    "translate": ("fairseq_generate",),
    "choose-lr": ("choice", "choose-lr"),
    "tuning": ("choice", "tuning"),
}


def fail(message: str) -> NoReturn:
    raise SystemExit(f"error: {message}")


def count_lines(path) -> int:
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))


def option_value(argv: Sequence[str], name: str) -> Optional[str]:
    """The value an argument list gives option ``name``: the last one, as argparse takes it."""
    value = None
    for k, arg in enumerate(argv):
        if arg == name and k + 1 < len(argv):
            value = argv[k + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value
