"""What the package's commands (relpos_analysis.report, .leaderboard and .bands) share: one-line
errors with exit status 2, outputs checked before any work, the files written before the
table is printed, and the options of the failure columns, oracle-length decoding and the
side lengths are counted on."""
import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Sequence, Tuple, TypeVar

from .failures import SHORT_RATIO
from .io import InputError, parse_named, parse_named_lists, write_files

LENGTH_SIDES = ("source", "reference", "hypothesis", "longer")
Request = TypeVar("Request")


class Parser(argparse.ArgumentParser):
    """Reports usage errors like every other bad input: one line, exit status 2."""

    def error(self, message):
        raise InputError(message)


def run_command(parser_factory: Callable[[], argparse.ArgumentParser],
                request_from_args: Callable[[argparse.Namespace], Request],
                compute: Callable[[Request], Tuple[str, Dict[Path, bytes]]],
                argv=None) -> int:
    """Parse ``argv`` into a command's request (its options checked once, before any input
    is read), ``compute`` (markdown, files) from it, write the files, print the markdown.

    The files come first, so that a reader that stops early (``| head``) costs none of
    them; files that cannot be written still leave the table on stdout, then the error.
    """
    try:
        request = request_from_args(parser_factory().parse_args(argv))
        markdown, outputs = compute(request)
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


def add_length_side_options(group, per_seed: bool) -> None:
    """--length-by, --reference-lengths and --system-lengths (with ``per_seed``, a file per
    seed of each system)."""
    files = "F[,F...]" if per_seed else "F"
    group.add_argument("--length-by", choices=LENGTH_SIDES, metavar="SIDE",
                       help="what a sentence's length is: source (default), reference (the first), "
                       "hypothesis (each system's own translation" + (" and seed's" if per_seed else "")
                       + ": each then has its own buckets, and only sets of the same sentences are "
                       "tested) or longer (the longer of source and reference)")
    group.add_argument("--reference-lengths", metavar="F",
                       help="the reference's length is the whitespace tokens of F (its segmented form, "
                       "e.g. the test set's seg.tgt) instead of the reference's text")
    group.add_argument("--system-lengths", action="append", default=[], metavar=f"NAME={files}",
                       help="with --length-by hypothesis: a system's lengths are the whitespace tokens "
                       "of its segmented translation (the translate tool's hyp.seg" + (", a file per seed "
                       "in --system's order" if per_seed else "") + ") instead of its text; every system or none")


def add_failure_options(group, per_seed: bool) -> None:
    """--system-scores, --oracle-decoding and --short-ratio (with ``per_seed``, a file per
    seed of each system)."""
    files = "F[,F...]" if per_seed else "F"
    group.add_argument("--system-scores", action="append", default=[], metavar=f"NAME={files}",
                       help="a system's mean log2-probability per token of each translation, one per line "
                       "(the translate tool's hyp.scores, or fairseq-generate's output: the mean of each "
                       "P- line)" + (", a file per seed in --system's order" if per_seed else "")
                       + ": the failure column 'log2 p/token'; every system or none")
    group.add_argument("--oracle-decoding", action="append", default=[], metavar="ORACLE=FREE",
                       help="system ORACLE is system FREE's model decoded with each reference's length "
                       "(fairseq-generate --task relpos_translation --oracle-length)"
                       + (", seed k of one decoding seed k of the other; listed unranked" if per_seed else "")
                       + ": a table and a plot of the two side by side, with their paired difference per bucket")
    group.add_argument("--short-ratio", type=float, default=SHORT_RATIO, metavar="R",
                       help=f"a translation with fewer tokens than R times its reference's is 'short' "
                       f"(default: {SHORT_RATIO})")


def every_system_or_none(specs: Sequence[str], option: str, seeds: Dict[str, int],
                         per_seed: bool) -> Dict[str, List[str]]:
    """``NAME=F`` options (with ``per_seed``, ``NAME=F[,F...]``, a file per seed) -> {name:
    [files]}: each NAME a system of ``seeds`` (name -> its number of seeds) with a file per
    seed, and every system given or none."""
    files = (dict(parse_named_lists(specs, option, "NAME=F[,F...]")) if per_seed
             else {name: [path] for name, path in parse_named(specs, option, "NAME=F")})
    unknown = [name for name in files if name not in seeds]
    if unknown:
        raise InputError(f"{option} {unknown[0]}: no --system has that name")
    absent = [name for name in seeds if name not in files]
    if files and absent:
        raise InputError(f"{option} gives no file for {', '.join(absent)}: every system or none")
    for name, paths in files.items():
        if len(paths) != seeds[name]:
            raise InputError(f"{option} {name}: {len(paths)} files for the {seeds[name]} seeds of --system {name}")
    return files


def length_side(args, side: str) -> str:
    """``side`` (what --length-by asks for, or "given" for --length-file), checked against
    the options that give lengths."""
    if args.length_file and args.length_by:
        raise InputError("--length-file already gives the lengths; drop --length-by")
    if args.system_lengths and side != "hypothesis":
        raise InputError("--system-lengths gives the translations' lengths: it goes with --length-by hypothesis")
    if args.reference_lengths and side not in ("reference", "longer"):
        raise InputError("--reference-lengths gives the reference's lengths: it goes with --length-by "
                         "reference or longer")
    return side
