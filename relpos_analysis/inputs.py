"""The input layer of the package's three commands (relpos_analysis.report, .leaderboard and
.bands): the files a request names, read and checked together (as many lines each, segmented
files of the same text, no subword markers in what is scored), and each sentence's length on
the side a request measures.

A system gives a file per seed (the leaderboard), per train band (the bands command) or one
(the report); all three are lists here, one text per file.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

from . import segment_scores as segment_scores_io
from .io import check_parallel, read_lines, read_segments
from .lengths import bpe_lengths, char_lengths, sentencepiece_lengths, whitespace_lengths
from .textcheck import check_no_subword_markers, check_segmented, check_segmented_form

# what a file that should be segmented and is not is told
_SEGMENTED_HINT = "its whitespace tokens are no length: give the segmented text"


class Text(NamedTuple):
    """A file's sentences (or numbers) and the path they were read from."""
    path: str
    lines: list


@dataclass(frozen=True)
class InputFiles:
    """The files of a request.  ``systems``, ``segment_scores``, ``log_probs`` and
    ``system_lengths`` give a system's files in the same order (per seed or per band)."""
    references: Tuple[str, ...]
    systems: Dict[str, Tuple[str, ...]]
    source: Optional[str] = None
    length_file: Optional[str] = None  # --length-file
    reference_lengths: Optional[str] = None  # --reference-lengths
    segment_scores: Dict[str, Dict[str, Tuple[str, ...]]] = field(default_factory=dict)  # metric -> system -> files
    log_probs: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # --system-scores
    system_lengths: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # --system-lengths
    extra: Tuple[Tuple[str, str], ...] = ()  # (option, path) of other inputs, e.g. --bpe-codes

    def named(self) -> List[Tuple[str, Path]]:
        """(option, path) of every input file, for check_outputs."""
        inputs = [("--source", self.source)] + [("--ref", path) for path in self.references]
        inputs += [(f"--system {name}", path) for name, paths in self.systems.items() for path in paths]
        inputs += [("--length-file", self.length_file), ("--reference-lengths", self.reference_lengths)]
        inputs += list(self.extra)
        inputs += [(f"{segment_scores_io.OPTION} {metric}:{name}", path)
                   for metric, by_system in self.segment_scores.items()
                   for name, paths in by_system.items() for path in paths]
        inputs += [(f"{option} {name}", path)
                   for option, files in (("--system-scores", self.log_probs), ("--system-lengths", self.system_lengths))
                   for name, paths in files.items() for path in paths]
        return [(option, Path(path)) for option, path in inputs if path]


@dataclass(frozen=True)
class InputTexts:
    """What InputFiles name, read and checked (read_inputs)."""
    references: List[Text]
    systems: Dict[str, List[Text]]
    source: Optional[Text] = None
    given: Optional[Text] = None  # --length-file
    reference_segmented: Optional[Text] = None  # --reference-lengths
    segment_scores: Dict[str, Dict[str, List[List[float]]]] = field(default_factory=dict)
    log_probs: Dict[str, List[List[float]]] = field(default_factory=dict)
    systems_segmented: Dict[str, List[Text]] = field(default_factory=dict)  # --system-lengths


def read_inputs(files: InputFiles, allow_subwords: bool = False) -> InputTexts:
    """Read every file of ``files`` and refuse what no command can score: files of different
    line counts, a --system-lengths file that is not its translation segmented, and (unless
    ``allow_subwords``) references or translations that still carry subword markers."""
    def texts(paths, read, option):
        return [Text(path, read(path, option)) for path in paths]

    source = Text(files.source, read_segments(files.source, "source", "--source")) if files.source else None
    references = [Text(path, read_segments(path, "reference", "--ref")) for path in files.references]
    systems = {name: texts(paths, lambda path, option: read_segments(path, "system", option), f"--system {name}")
               for name, paths in files.systems.items()}
    given = Text(files.length_file, read_lines(files.length_file, "--length-file")) if files.length_file else None
    reference_segmented = (Text(files.reference_lengths, read_lines(files.reference_lengths, "--reference-lengths"))
                           if files.reference_lengths else None)
    segmented = {name: texts(paths, read_lines, f"--system-lengths {name}")
                 for name, paths in files.system_lengths.items()}
    scores = {metric: {name: texts(paths, segment_scores_io.read_scores, f"{segment_scores_io.OPTION} {metric}:{name}")
                       for name, paths in by_system.items()}
              for metric, by_system in files.segment_scores.items()}
    log_probs = {name: texts(paths, segment_scores_io.read_log_probs, f"--system-scores {name}")
                 for name, paths in files.log_probs.items()}

    hypotheses = [text for seeds in systems.values() for text in seeds]
    parallel = ([source] if source else []) + references + hypotheses + [text for text in (given, reference_segmented) if text]
    parallel += [text for seeds in segmented.values() for text in seeds]
    parallel += [text for by_system in scores.values() for seeds in by_system.values() for text in seeds]
    parallel += [text for seeds in log_probs.values() for text in seeds]
    check_parallel(parallel)
    for name, seeds in segmented.items():
        for lines, hyps in zip(seeds, systems[name]):
            check_segmented_form(lines.path, lines.lines, hyps.path, hyps.lines, f"--system-lengths {name}")
    if not allow_subwords:
        for text in references + hypotheses:
            check_no_subword_markers(text.path, text.lines)
    return InputTexts(
        references=references, systems=systems, source=source, given=given,
        reference_segmented=reference_segmented,
        segment_scores={metric: {name: [text.lines for text in seeds] for name, seeds in by_system.items()}
                        for metric, by_system in scores.items()},
        log_probs={name: [text.lines for text in seeds] for name, seeds in log_probs.items()},
        systems_segmented=segmented,
    )


@dataclass(frozen=True)
class LengthCounting:
    """How a text's lengths are counted: with ``bpe_codes`` or ``spm_model`` its subwords,
    with ``unit`` "char" its characters other than whitespace, else its whitespace tokens
    (refused where the text is unsegmented: ``unsegmented_hint`` says what to do instead)."""
    unsegmented_hint: str
    bpe_codes: Optional[str] = None
    spm_model: Optional[str] = None
    unit: str = "token"

    def count(self, text: Text) -> List[int]:
        if self.bpe_codes:
            return bpe_lengths(text.lines, self.bpe_codes)
        if self.spm_model:
            return sentencepiece_lengths(text.lines, self.spm_model)
        if self.unit == "char":
            return char_lengths(text.lines)
        check_segmented(text.path, text.lines, self.unsegmented_hint)
        return whitespace_lengths(text.lines)

    @property
    def label(self) -> str:
        """What count counts, for the histogram's axis."""
        if self.bpe_codes:
            return "BPE subwords"
        if self.spm_model:
            return "SentencePiece pieces"
        return "characters" if self.unit == "char" else "whitespace tokens"


def segmented_lengths(text: Text, hint: str = _SEGMENTED_HINT) -> List[int]:
    """The whitespace tokens of a file given as segmented text (refused where it is not)."""
    check_segmented(text.path, text.lines, hint)
    return whitespace_lengths(text.lines)


def lengths_by_side(side: str, texts: InputTexts, counting: LengthCounting,
                    given_hint: str = _SEGMENTED_HINT):
    """Each sentence's length on ``side`` (cli.LENGTH_SIDES, or "given" for --length-file) and
    what it counts, for the histogram's axis: one list, or by hypothesis each system's, one
    list per file.  Segmented files (--length-file, --reference-lengths, --system-lengths) are
    counted in whitespace tokens; the texts as ``counting`` says."""
    if side == "given":
        return (segmented_lengths(texts.given, given_hint),
                f"length (tokens of {Path(texts.given.path).name})")
    unit = counting.label
    if side == "source":
        return counting.count(texts.source), f"source length ({unit})"
    segmented = texts.reference_segmented
    reference = segmented_lengths(segmented, given_hint) if segmented else counting.count(texts.references[0])
    reference_unit = f"tokens of {Path(segmented.path).name}" if segmented else unit
    if side == "reference":
        return reference, f"reference length ({reference_unit})"
    if side == "longer":
        return ([max(pair) for pair in zip(counting.count(texts.source), reference)],
                f"length of the longer side (source: {unit}; reference: {reference_unit})")
    if texts.systems_segmented:
        return ({name: [segmented_lengths(text, given_hint) for text in seeds]
                 for name, seeds in texts.systems_segmented.items()},
                "hypothesis length (whitespace tokens of the segmented translations)")
    return ({name: [counting.count(text) for text in seeds] for name, seeds in texts.systems.items()},
            f"hypothesis length ({unit}; each system its own)")
