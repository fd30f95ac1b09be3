"""What the recipes' command lines share: options checked up front, naming the option and what
it expects."""
import argparse
import os
import shlex
from pathlib import Path
from typing import List, Sequence

from ..engine import DEFAULT_THREADS, Console, StepError
from relpos_analysis.buckets import Bucket, parse_bands
from relpos_analysis.io import InputError

class Parser(argparse.ArgumentParser):
    """argparse whose errors name the option and end the recipe as ``error: ...`` (the
    scripts print their --help themselves, from their comment block)."""

    def __init__(self, prog: str):
        super().__init__(prog=prog, add_help=False, allow_abbrev=False)

    def error(self, message):
        if message.startswith("argument "):
            message = message[len("argument "):]
        raise StepError(f"{message} (see --help)")


def _checked(convert, expected: str):
    def check(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got '{text}'") from None
        return value

    check.__name__ = expected
    return check


def _natural(minimum: int):
    def convert(text):
        value = int(text)
        if value < minimum or str(value) != text.lstrip("+"):
            raise ValueError
        return value

    return convert


positive_int = _checked(_natural(1), "a positive integer")
non_negative_int = _checked(_natural(0), "a non-negative integer")


def fairseq_path(text: str, separators: str = ":") -> Path:
    """A path fairseq reads: it splits data paths and checkpoint paths on ':' (shards, an
    ensemble), so a path with one, given or in the working directory a relative path starts
    from, would be read as several."""
    if not text:
        raise argparse.ArgumentTypeError("expected a path, got ''")
    for char in separators:
        if char in text:
            raise argparse.ArgumentTypeError(
                f"'{text}' has a '{char}', which fairseq reads as a separator of paths; "
                f"choose a path without {' or '.join(repr(c) for c in separators)}")
        if char in os.path.abspath(text):
            raise argparse.ArgumentTypeError(
                f"'{text}' is relative to the working directory {os.getcwd()}, whose '{char}' fairseq reads as a "
                "separator of paths; run from a directory without it, or give an absolute path")
    return Path(text)


def folder(text: str) -> Path:
    """A folder of the recipes: fairseq splits data paths on ':' (shards) and lists on ',',
    so a folder with either in its path would be read as several."""
    if not text:
        raise argparse.ArgumentTypeError("expected a folder, got ''")
    fairseq_path(text, ",:")
    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"expected a folder, but {text} is a file")
    return Path(text)


def name_list(text: str) -> List[str]:
    """A comma-separated list without empty or repeated names."""
    names = [name.strip() for name in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got '{text}'")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(
            f"names {','.join(repeated)} more than once (each system trains into its own folder)")
    return names


def band_list(text: str) -> List[Bucket]:
    """Length bands LO:HI separated by commas, none overlapping another
    (relpos_analysis.buckets.parse_bands)."""
    try:
        return parse_bands(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_threads(parser: Parser, what: str = "parallel workers") -> None:
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS, help=what)


def absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


def command_line(script: str, argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in ["bash", script, *argv])


def log(message: str) -> None:
    Console().log(message)
