"""What the package's commands (relpos_analysis.report, relpos_analysis.leaderboard) share: one-line
errors with exit status 2, outputs checked before any work, and the files written before
the table is printed."""
import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterable, Sequence, Tuple

from .io import InputError, write_files


class Parser(argparse.ArgumentParser):
    """Reports usage errors like every other bad input: one line, exit status 2."""

    def error(self, message):
        raise InputError(message)


def run_command(parser_factory: Callable[[], argparse.ArgumentParser],
                compute: Callable[[argparse.Namespace], Tuple[str, Dict[Path, bytes]]],
                argv=None) -> int:
    """Parse ``argv``, ``compute`` (markdown, files), write the files, print the markdown.

    The files come first, so that a reader that stops early (``| head``) costs none of
    them; files that cannot be written still leave the table on stdout, then the error.
    """
    try:
        args = parser_factory().parse_args(argv)
        markdown, outputs = compute(args)
    except InputError as err:
        return _failed(err)
    try:
        write_files(outputs)
    except InputError as err:
        print_table(markdown)
        return _failed(err)
    print_table(markdown)
    return 0


def _failed(err: InputError) -> int:
    print(f"error: {err}", file=sys.stderr)
    return 2


def print_table(markdown: str) -> None:
    try:
        sys.stdout.write(markdown)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader has gone (``| head``); the files are written.  Python would report
        # the failure again when it flushes stdout at exit: point stdout at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def check_outputs(outputs: Sequence[Tuple[str, Path]], inputs: Sequence[Tuple[str, Path]]) -> None:
    """``outputs`` and ``inputs`` are (option, path) pairs.  Each output needs its own path,
    none may be an input, and each must be writable."""
    writers: Dict[str, str] = {}
    for option, path in outputs:
        key = os.path.realpath(path)
        if key in writers:
            raise InputError(f"{writers[key]} and {option} would both write {path}: give each "
                             "output its own path")
        writers[key] = option
    for option, path in inputs:
        key = os.path.realpath(path)
        if key in writers:
            raise InputError(f"{writers[key]} would overwrite {path}, the input given with "
                             f"{option}: choose another output path")
    check_writable(path for _, path in outputs)


def check_writable(paths: Iterable[Path]) -> None:
    """Every output's folder, or the nearest one that exists, must be a folder this process
    can write in: tried with a temporary file, so that a read-only folder fails now and not
    after the scoring."""
    for path in paths:
        if Path(path).is_dir():
            raise InputError(f"cannot write {path}: it is a folder")
        folder = Path(path).parent
        while not folder.exists():
            folder = folder.parent
        if not folder.is_dir():
            raise InputError(f"cannot write {path}: {folder} is not a folder")
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".relpos-probe."):
                pass
        except OSError as err:
            raise InputError(f"cannot write {path}: {folder} is not writable "
                             f"({err.strerror or err})") from None
