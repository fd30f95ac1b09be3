"""Reading and validating the report's inputs.

Every problem a user can cause is raised as ``InputError`` with a one-line message; the CLI
prints it as ``error: ...`` and exits 2.  Plain text is one sentence per line, UTF-8.
fairseq-generate output is recognised and read by sentence id, so that the order it prints
in (batches sorted by length) does not matter.  A file of empty lines is valid: a system
that outputs nothing gets the scores of nothing.
"""
import re
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

# fairseq-generate prefixes: S- source, T- target (reference), H- hypothesis, D- the
# hypothesis decoded by its --bpe / --tokenizer, as S- and T- lines are.  A system is
# read from its D- lines where there are any, so that it matches the T- lines.
FAIRSEQ_TAGS = {"source": ("S",), "reference": ("T",), "system": ("D", "H")}
_SCORED_TAGS = ("H", "D")  # these carry a score before the text
_FAIRSEQ_LINE = re.compile(r"^([STHD])-(\d+)\t(.*)$")


class InputError(ValueError):
    """A problem with what the user passed in; the message is a single line."""


def existing_file(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    return path


def read_lines(path) -> List[str]:
    """The file's lines without their newline characters.

    Only ``\\n`` ends a line (as in sacrebleu), so a stray carriage return or Unicode line
    separator inside a sentence cannot shift the alignment with the other files.
    """
    data = existing_file(path).read_bytes()
    if not data:
        raise InputError(f"empty file: {path}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"{path} is not valid UTF-8 (line {line}, byte {err.start})") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def is_fairseq_generate_output(lines: Sequence[str]) -> bool:
    return any(_FAIRSEQ_LINE.match(line) for line in lines)


def fairseq_segments(lines: Sequence[str], tag: str, path) -> List[str]:
    """The ``tag`` column of fairseq-generate output, in sentence-id order.

    H- and D- lines carry a score before the text; with ``--nbest`` > 1 the first line of
    an id is the best hypothesis, so later ones are ignored.
    """
    by_id: Dict[int, str] = {}
    for line in lines:
        match = _FAIRSEQ_LINE.match(line)
        if not match or match.group(1) != tag:
            continue
        text = match.group(3)
        if tag in _SCORED_TAGS:
            text = text.split("\t", 1)[1] if "\t" in text else ""
        by_id.setdefault(int(match.group(2)), text)
    if not by_id:
        raise InputError(f"{path} is fairseq-generate output without {tag}- lines")
    missing = sorted(set(range(max(by_id) + 1)) - set(by_id))
    if missing:
        raise InputError(
            f"{path} is fairseq-generate output without {tag}- lines for "
            f"{len(missing)} sentence ids (first: {missing[0]})"
        )
    return [by_id[i] for i in range(len(by_id))]


def read_segments(path, role: str) -> List[str]:
    """Sentences of a ``role`` file ("source", "reference" or "system"), plain or fairseq."""
    lines = read_lines(path)
    if not is_fairseq_generate_output(lines):
        return lines
    tags = FAIRSEQ_TAGS[role]
    present = {match.group(1) for match in map(_FAIRSEQ_LINE.match, lines) if match}
    tag = next((tag for tag in tags if tag in present), tags[-1])
    return fairseq_segments(lines, tag, path)


def check_parallel(named_segments: Sequence[Tuple[str, Sequence[str]]]) -> None:
    """All (path, sentences) pairs must have as many sentences as the first one."""
    first_path, first = named_segments[0]
    for path, segments in named_segments[1:]:
        if len(segments) != len(first):
            raise InputError(
                f"line counts differ: {first_path} has {len(first)} lines, "
                f"{path} has {len(segments)}"
            )


def parse_system_spec(spec: str) -> Tuple[str, str]:
    """``NAME=FILE`` -> (name, file)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise InputError(f"--system expects NAME=FILE, got {spec!r}")
    return name, path


def parse_system_specs(specs: Sequence[str]) -> List[Tuple[str, str]]:
    systems = [parse_system_spec(spec) for spec in specs]
    names = [name for name, _ in systems]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InputError(f"system names must be unique: {', '.join(duplicates)} given twice")
    return systems
