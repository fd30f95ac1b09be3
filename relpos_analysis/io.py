"""Reading and validating the inputs, and writing the outputs all or nothing.

Every problem a user can cause is raised as ``InputError`` with a one-line message; the CLIs
print it as ``error: ...`` and exit 2.  Plain text is one sentence per line, UTF-8.
fairseq-generate output is recognised and read by sentence id, so that the order it prints
in (batches sorted by length) does not matter.  A file of empty lines is valid: a system
that outputs nothing gets the scores of nothing.
"""
import math
import os
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

# fairseq-generate prefixes: S- source, T- target (reference), H- hypothesis, D- the
# hypothesis decoded by its --bpe / --tokenizer, as S- and T- lines are, P- the log2-
# probability of each of the hypothesis's tokens and of its end of sentence.  A system is
# read from its D- lines where there are any, so that it matches the T- lines.
FAIRSEQ_TAGS = {"source": ("S",), "reference": ("T",), "system": ("D", "H")}
_SCORED_TAGS = ("H", "D")  # these carry a score before the text
_TAG_CONTENT = {"S": "source", "T": "reference", "H": "hypothesis", "D": "hypothesis",
                "P": "token scores"}
_FAIRSEQ_LINE = re.compile(r"^([STHDP])-(\d+)\t(.*)$")
_BYTE_ORDER_MARK = "\ufeff"


class InputError(ValueError):
    """A problem with what the user passed in; the message is a single line."""


def existing_file(path, option: Optional[str] = None) -> Path:
    """``path`` as a Path if it is a file; else an InputError naming ``option`` (e.g.
    "--system abs") and what it expects."""
    path = Path(path)
    if path.is_file():
        return path
    named = f"{option}: " if option else ""
    if path.is_dir():
        raise InputError(f"{named}{path} is a folder; expected a file")
    raise InputError(f"{named}no such file: {path}")


def read_lines(path, option: Optional[str] = None) -> List[str]:
    """The file's lines without their newline characters.

    Only ``\\n`` ends a line (as in sacrebleu), so a stray carriage return or Unicode line
    separator inside a sentence cannot shift the alignment with the other files.  A byte
    order mark at the start is the encoding's, not the first sentence's, and is dropped.
    """
    path = existing_file(path, option)
    data = path.read_bytes()
    if not data:
        raise InputError(f"empty file: {path}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"{path} is not valid UTF-8 (line {line}, byte {err.start})") from None
    if text.startswith(_BYTE_ORDER_MARK):
        text = text[len(_BYTE_ORDER_MARK):]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def is_fairseq_generate_output(lines: Sequence[str]) -> bool:
    return any(_FAIRSEQ_LINE.match(line) for line in lines)


def fairseq_segments(lines: Sequence[str], tag: str, path,
                     n_sentences: Optional[int] = None) -> List[str]:
    """The ``tag`` column of fairseq-generate output, in sentence-id order.

    H- and D- lines carry a score before the text; with ``--nbest`` > 1 fairseq prints an
    id's best hypothesis first, so later lines of the id are ignored.  Every id from 0 to
    ``n_sentences`` - 1 (default: the largest id) must have a line and none may lie beyond:
    a sentence fairseq skipped would otherwise be scored as an empty translation, or shift
    the others.
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
        raise InputError(f"{path} has no {tag}- lines (fairseq-generate output expected)")
    expected = max(by_id) + 1 if n_sentences is None else n_sentences
    content = _TAG_CONTENT[tag]
    beyond = sorted(i for i in by_id if not 0 <= i < expected)
    if beyond:
        raise InputError(f"{path} has {content} lines for ids {beyond[:5]}"
                         f"{'...' if len(beyond) > 5 else ''} beyond the {expected} source lines")
    missing = [i for i in range(expected) if i not in by_id]
    if missing:
        skipped = (": fairseq skipped them (sources longer than the model's maximum positions?)"
                   if tag in _SCORED_TAGS else "")
        raise InputError(f"{path} has no {content} for {len(missing)} of {expected} sentences "
                         f"(ids {missing[:10]}{'...' if len(missing) > 10 else ''}){skipped}")
    return [by_id[i] for i in range(expected)]


def fairseq_log_probs(lines: Sequence[str], path, n_sentences: Optional[int] = None) -> List[float]:
    """Each sentence's mean log2-probability per output token, its end of sentence included:
    the mean of the P- line of its best hypothesis, in sentence-id order (ids checked as
    fairseq_segments checks them).  fairseq's H- score is the same sum divided by the token
    count to the power --lenpen (with --unnormalized, not divided), so this is the H- score
    of the default --lenpen 1, whatever the decoding's --lenpen was."""
    scores = []
    for sentence_id, text in enumerate(fairseq_segments(lines, "P", path, n_sentences)):
        try:
            values = [float(value) for value in text.split()]
        except ValueError:
            raise InputError(f"{path}: the P- line of sentence {sentence_id} holds something other than "
                             f"numbers: {text[:60]!r}") from None
        if not values:
            raise InputError(f"{path}: the P- line of sentence {sentence_id} is empty; fairseq scores at least "
                             "the end of sentence")
        scores.append(math.fsum(values) / len(values))
    return scores


def read_segments(path, role: str, option: Optional[str] = None) -> List[str]:
    """Sentences of a ``role`` file ("source", "reference" or "system"), plain or fairseq."""
    lines = read_lines(path, option)
    if not is_fairseq_generate_output(lines):
        return lines
    tags = FAIRSEQ_TAGS[role]
    present = {match.group(1) for match in map(_FAIRSEQ_LINE.match, lines) if match}
    tag = next((tag for tag in tags if tag in present), tags[-1])
    return fairseq_segments(lines, tag, path)


def check_parallel(named_segments: Sequence[Tuple[str, Sequence[object]]]) -> None:
    """All (path, sentences) pairs must have as many sentences as the first one."""
    first_path, first = named_segments[0]
    for path, segments in named_segments[1:]:
        if len(segments) != len(first):
            raise InputError(
                f"line counts differ: {first_path} has {len(first)} lines, "
                f"{path} has {len(segments)}"
            )


def parse_named(specs: Sequence[str], option: str, form: str) -> List[Tuple[str, str]]:
    """``NAME=VALUE`` options -> [(name, value)]; every name once."""
    pairs = []
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or not value:
            raise InputError(f"{option} expects {form}, got {spec!r}")
        pairs.append((name, value))
    names = [name for name, _ in pairs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(f"{option} names {', '.join(twice)} more than once")
    return pairs


def parse_named_lists(specs: Sequence[str], option: str, form: str) -> List[Tuple[str, List[str]]]:
    """``NAME=A,B,...`` options -> [(name, [A, B, ...])]; no empty item."""
    pairs = [(name, value.split(",")) for name, value in parse_named(specs, option, form)]
    for name, values in pairs:
        if not all(values):
            raise InputError(f"{option} {name}: an empty file name in {','.join(values)!r}")
    return pairs


def write_files(contents: Dict[Path, bytes]) -> None:
    """Write every file, all or nothing.

    Each file is first written under a temporary name; then each existing file is moved
    aside and the new one moved in.  A failure at any point removes the new files and puts
    the old ones back, so the folders hold either the previous set or the new set, never
    a mix of the two and never a partial file.
    """
    suffix = f"{os.getpid()}.tmp"
    temporaries: Dict[Path, Path] = {}
    previous: Dict[Path, Path] = {}
    placed: List[Path] = []
    path = None
    try:
        for path, data in contents.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            temporaries[path] = path.with_name(f".{path.name}.new.{suffix}")
            temporaries[path].write_bytes(data)
        for path, temporary in temporaries.items():
            if path.exists():
                previous[path] = path.with_name(f".{path.name}.old.{suffix}")
                os.replace(path, previous[path])
            os.replace(temporary, path)
            placed.append(path)
    except OSError as err:
        for new in placed:
            if new not in previous:
                new.unlink(missing_ok=True)
        for old_path, old in previous.items():
            os.replace(old, old_path)
        for temporary in temporaries.values():
            temporary.unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {err.strerror or err}") from None
    for old in previous.values():
        old.unlink(missing_ok=True)
