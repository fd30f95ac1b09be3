"""The tools the recipes' steps run: each an importable module with a command line,
``python -m relpos_recipes.tools.MODULE [SUBCOMMAND] ...``.

A tool writes exactly the outputs it is given (the engine hands it temporary names and
renames them when it succeeds) and fails with ``error: ...`` naming the file at fault.

``COMMANDS`` names each tool symbolically: a step records ``{tool:NAME}`` instead of the
module's path, so that moving a tool to another module changes no step's identity and redoes
no work.
"""
import argparse
import os
from typing import Dict, NoReturn, Optional, Sequence, Tuple

# symbolic name -> (the module run with python -m, its subcommand if it has several); the
# analysis package's command lines make the reports and boards
COMMANDS: Dict[str, Tuple[str, ...]] = {
    "corpora": ("relpos_recipes.tools.wmt_sources",),
    "tatoeba": ("relpos_recipes.tools.tatoeba",),
    "take-corpus": ("relpos_recipes.tools.user_corpus", "take"),
    "concat-augment": ("relpos_recipes.tools.concat_augment",),
    "toy-corpus": ("relpos_recipes.tools.toy_corpus",),
    "scan": ("relpos_recipes.tools.scan",),
    "scan-curve": ("relpos_recipes.tools.scan_curve",),
    "scan-updates": ("relpos_recipes.tools.scan_updates",),
    "filter-pairs": ("relpos_recipes.tools.filter_pairs",),
    "spm": ("relpos_recipes.tools.spm",),
    "binarize": ("relpos_recipes.tools.binarize",),
    "textproc": ("relpos_recipes.tools.text", "textproc"),
    "concat-lines": ("relpos_recipes.tools.text", "concat-lines"),
    "longer-side": ("relpos_recipes.tools.text", "longer-side"),
    "cut-lines": ("relpos_recipes.tools.text", "cut-lines"),
    "deseg": ("relpos_recipes.tools.text", "deseg"),
    "write-env": ("relpos_recipes.tools.records", "write-env"),
    "testset-meta": ("relpos_recipes.tools.records", "testset-meta"),
    "train": ("relpos_recipes.tools.fairseq_train",),
    "translate": ("relpos_recipes.tools.fairseq_generate", "translate"),
    "log-probs": ("relpos_recipes.tools.fairseq_generate", "scores"),
    "choose-lr": ("relpos_recipes.tools.choice", "choose-lr"),
    "tuning": ("relpos_recipes.tools.choice", "tuning"),
    "report": ("relpos_analysis.report",),
    "board": ("relpos_analysis.leaderboard",),
    "band-matrix": ("relpos_analysis.bands",),
}


def run_parsed(parser: argparse.ArgumentParser, argv: Optional[Sequence[str]] = None) -> int:
    """A tool's command line: the function its subcommand set (``set_defaults(run=...)``)
    run on the parsed options."""
    args = parser.parse_args(argv)
    args.run(args)
    return 0


def fail(message: str) -> NoReturn:
    raise SystemExit(f"error: {message}")


def write_record(folder, names: Sequence[str], record: dict, table: str, figure: bytes) -> None:
    """A tool's record (JSON), table (markdown, also printed) and figure (PNG), named by
    ``names`` in that order, in ``folder`` (made if missing), through the analysis package's
    all-or-nothing writer."""
    import json
    from pathlib import Path

    from relpos_analysis.io import InputError, write_files

    contents = ((json.dumps(record, indent=2) + "\n").encode("utf-8"), table.encode("utf-8"), figure)
    try:
        write_files({Path(folder) / name: data for name, data in zip(names, contents)})
    except InputError as err:
        fail(str(err))
    print(table, end="")


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


def write_lines(paths_and_lines: Sequence[Tuple[str, Sequence[str]]]) -> None:
    """Writes every file's lines (ASCII), creating its folder: the corpus generators' outputs.
    Under the names it is given, which the engine makes temporary names and publishes once
    the step succeeds."""
    for path, lines in paths_and_lines:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(path, "w", encoding="ascii", newline="\n") as stream:
            stream.writelines(line + "\n" for line in lines)
