"""Scores of a metric computed elsewhere (COMET, MetricX, ...), one per sentence: the
``--segment-scores NAME:SYSTEM=FILE`` option of the report and the leaderboard, and its
files.  A file holds one number per line, sentence-aligned with the test set; the metric's
score on a set of sentences is their mean (relpos_analysis.metrics.SegmentMean)."""
import re
from typing import Dict, List, Sequence

from . import failures
from .io import InputError, fairseq_log_probs, is_fairseq_generate_output, read_lines
from .metrics import METRICS, SEGMENT_SCORE_BOUND

OPTION = "--segment-scores"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
# A metric's name is a key of the records, and so are these (the failure columns too).
_TAKEN = set(METRICS) | set(failures.DISPLAY_NAMES) | {
    "system", "baseline", "bucket", "n", "rank", "seeds", "parameters", "failure", "set", "oracle_of"}


def parse_specs(specs: Sequence[str], systems: Sequence[str],
                per_seed: bool = False) -> Dict[str, Dict[str, List[str]]]:
    """``NAME:SYSTEM=FILE`` options (with ``per_seed``, ``NAME:SYSTEM=FILE[,FILE...]``, one
    file per seed) -> {name: {system: [files]}}.  Every system of ``systems`` needs scores
    of every metric named: the paired tests compare each with the baseline."""
    form = f"NAME:SYSTEM=FILE{'[,FILE...]' if per_seed else ''}"
    scores: Dict[str, Dict[str, List[str]]] = {}
    for spec in specs:
        head, equals, files = spec.partition("=")
        name, colon, system = head.partition(":")
        if not (equals and colon and name and system and files):
            raise InputError(f"{OPTION} expects {form}, got {spec!r}")
        if not _NAME.match(name):
            raise InputError(f"{OPTION} {head}: a metric's name is letters, digits and '-', "
                             f"starting with a letter, got {name!r}")
        if name.lower() in _TAKEN:
            raise InputError(f"{OPTION} {head}: the name {name!r} is taken (by sacrebleu's metrics "
                             "or a field of the records); choose another")
        if system not in systems:
            raise InputError(f"{OPTION} {head}: {system!r} is no --system")
        if system in scores.setdefault(name, {}):
            raise InputError(f"{OPTION} gives {name} scores of {system} twice")
        paths = files.split(",") if per_seed else [files]
        if not all(paths):
            raise InputError(f"{OPTION} {head}: an empty file name in {files!r}")
        scores[name][system] = paths
    for name, by_system in scores.items():
        absent = [system for system in systems if system not in by_system]
        if absent:
            raise InputError(f"{OPTION} {name}: no scores for {', '.join(absent)}; every system "
                             "needs them, to be tested against the baseline")
    return scores


def read_scores(path, option: str) -> List[float]:
    """The file's numbers, one per line; anything else is refused by line."""
    scores = []
    for number, line in enumerate(read_lines(path, option), 1):
        try:
            score = float(line)
        except ValueError:
            raise InputError(f"{option}: line {number} of {path} is not a number: {line!r}") from None
        if not abs(score) <= SEGMENT_SCORE_BOUND:
            raise InputError(f"{option}: line {number} of {path} is {line.strip()!r}, not a finite number "
                             f"of at most {SEGMENT_SCORE_BOUND:g} in magnitude (a set's score is a sum "
                             "over its sentences, which must stay finite)")
        scores.append(score)
    return scores


def read_log_probs(path, option: str) -> List[float]:
    """Each translation's mean log2-probability per token: the translate tool's hyp.scores
    (one number per line), or fairseq-generate's output (the mean of each best hypothesis's
    P- line, relpos_analysis.io.fairseq_log_probs)."""
    lines = read_lines(path, option)
    if is_fairseq_generate_output(lines):
        return fairseq_log_probs(lines, path)
    return read_scores(path, option)
