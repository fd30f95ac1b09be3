"""Per-length-bucket BLEU, TER and chrF of several systems: the study's Table 2 in one command.

    python -m relpos_analysis.report --source newstest.src --ref newstest.ref \\
        --system abs=abs.hyp --system rel=rel.hyp --baseline abs --out-dir report/

The files are written when everything is computed (under temporary names, then renamed,
all or nothing), then the markdown table goes to stdout.  Bad input is a one-line
``error: ...`` on stderr and exit status 2, and every check that needs no scores (options,
output paths, input files) comes before the scoring.
"""
import argparse
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

from . import render, segment_scores
from .buckets import DEFAULT_EDGES, buckets_from_edges, parse_edges, quantile_edges
from .cache import StatisticsCache, default_directory
from .cli import Parser, check_outputs, run_command
from .evaluate import PAIRED_TESTS, check_baseline, check_resampling, evaluate_by_length
from .io import (
    InputError, check_parallel, existing_file, parse_named, read_lines, read_segments,
)
from .lengths import bpe_lengths, char_lengths, sentencepiece_lengths, whitespace_lengths
from .metrics import METRICS, TOKENIZERS, MetricConfig, parse_metrics
from .textcheck import check_no_subword_markers, check_segmented

OUT_DIR_NAMES = {
    "markdown": "report.md",
    "json": "report.json",
    "csv": "report.csv",
    "latex": "report.tex",
    "plot": "buckets",  # prefix of buckets.png and buckets.pdf
    "histogram": "lengths.png",
}
PLOT_FORMATS = ("png", "pdf")
HISTOGRAM_FORMATS = ("png", "pdf", "svg")
# sacrebleu's rule for "this looks tokenized" (metrics.py switches its own check off).
_TOKENIZED_LINES_WARNING = 100
# Sentence x system pairs from which a report prints its stages (a few seconds' work).
PROGRESS_MIN_PAIRS = 10_000


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="relpos-report",
        description="BLEU, TER and chrF of several systems per source-length bucket, with "
        "bootstrap confidence intervals and paired significance tests against a baseline.",
    )
    inputs = parser.add_argument_group(
        "inputs (plain text, one sentence per line, or fairseq-generate output)"
    )
    inputs.add_argument("--source", required=True,
                        help="source sentences; their whitespace tokens give the length J")
    inputs.add_argument("--ref", action="append", required=True, metavar="REF",
                        help="reference translations; repeat for multiple references")
    inputs.add_argument("--system", action="append", required=True, metavar="NAME=FILE",
                        help="a system's translations; repeat for each system")
    inputs.add_argument("--failed", action="append", default=[], metavar="NAME=WHY",
                        help="a system that could not be scored (its training or translation failed) "
                             "and why: listed under the table")
    inputs.add_argument("--baseline", metavar="NAME",
                        help="the system the others are tested against (default: the first)")
    inputs.add_argument("--segment-scores", action="append", default=[],
                        metavar="NAME:SYSTEM=FILE",
                        help="a metric computed elsewhere (e.g. COMET): FILE has SYSTEM's score of "
                        "each sentence, one per line; scored per bucket as their mean, with the "
                        "same intervals and tests; repeat for every system")
    inputs.add_argument("--allow-subwords", action="store_true",
                        help="score references and translations that still carry BPE ('@@ ') or "
                        "SentencePiece markers as they are (refused otherwise)")

    lengths = parser.add_argument_group("lengths and buckets")
    length_source = lengths.add_mutually_exclusive_group()
    length_source.add_argument("--length-file", metavar="F",
                               help="lengths from the whitespace tokens of F, e.g. the BPE-segmented "
                               "source")
    length_source.add_argument("--bpe-codes", metavar="F",
                               help="segment with these subword-nmt BPE codes and count subwords")
    length_source.add_argument("--spm-model", metavar="F",
                               help="segment with this SentencePiece model and count pieces")
    lengths.add_argument("--length-unit", choices=("token", "char"), default="token",
                         help="token: whitespace tokens (default); char: characters other than "
                         "whitespace, for unsegmented Chinese, Japanese, Thai, ... text")
    lengths.add_argument("--by-reference-length", action="store_true",
                         help="bucket by the (first) reference's length instead of the source's")
    edges = lengths.add_mutually_exclusive_group()
    edges.add_argument("--edges", metavar="E1,E2,...",
                       help="inclusive upper ends of the buckets (default: 25,50,75,100); "
                       "'none': a single bucket")
    edges.add_argument("--quantiles", type=int, metavar="N",
                       help="N buckets of (nearly) equal size instead")
    lengths.add_argument("--train-limit", type=int, metavar="N",
                         help="mark this training-length limit in the histogram")

    scoring = parser.add_argument_group("scoring (sacrebleu)")
    scoring.add_argument("--metrics", default=",".join(METRICS),
                         help="comma-separated subset of bleu,ter,chrf (default: all)")
    scoring.add_argument("--target-lang", metavar="LANG", default="",
                         help="language code of the translations: BLEU's tokenizer is then "
                         "sacrebleu's for it (zh: zh, ja: ja-mecab, ko: ko-mecab, others: 13a)")
    scoring.add_argument("--tokenize", choices=TOKENIZERS, metavar="TOK",
                         help="BLEU tokenizer (default: 13a, or the one for --target-lang): none "
                         "(pre-tokenized text, as in the study), "
                         f"{', '.join(t for t in TOKENIZERS if t != 'none')}")
    scoring.add_argument("--lowercase", action="store_true", help="case-insensitive BLEU and chrF")
    scoring.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                         help="bootstrap resamples for the 95%% intervals and the paired bootstrap "
                         "test (default: 1000; 0: none)")
    scoring.add_argument("--paired-test", choices=PAIRED_TESTS, default="bs",
                         help="bs: paired bootstrap resampling (default), ar: approximate "
                         "randomization")
    scoring.add_argument("--ar-trials", type=int, default=10000, metavar="N",
                         help="trials of the ar test (default: 10000)")
    scoring.add_argument("--seed", type=int, default=12345,
                         help="seed of the resampling (default: 12345, as in sacrebleu)")
    scoring.add_argument("--workers", type=int, default=2,
                         help="processes computing sentence statistics (default: 2)")
    cache = scoring.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", metavar="DIR",
                       help="where sentence statistics are kept between reports (default: "
                       "$RELPOS_CACHE_DIR or ~/.cache/fairseq-relpos/statistics)")
    cache.add_argument("--no-cache", action="store_true",
                       help="compute every statistic afresh and store none")

    outputs = parser.add_argument_group("outputs (the markdown table always goes to stdout)")
    outputs.add_argument("--out-dir", metavar="DIR",
                         help="write report.md/.json/.csv/.tex, buckets.png/.pdf and lengths.png")
    outputs.add_argument("--json", metavar="P", help="one record per (system, bucket)")
    outputs.add_argument("--csv", metavar="P", help="the same records as CSV")
    outputs.add_argument("--latex", metavar="P", help="the table for a paper")
    outputs.add_argument("--plot", metavar="PREFIX",
                         help="score per bucket with 95%% intervals: PREFIX.png and PREFIX.pdf")
    outputs.add_argument("--histogram", metavar="P", help="length histogram (.png, .pdf or .svg)")
    outputs.add_argument("--title", metavar="T", help="title of the tables and plots")
    return parser


def main(argv=None) -> int:
    return run_command(build_parser, run, argv)


def run(args: argparse.Namespace) -> Tuple[str, Dict[Path, bytes]]:
    """Everything but the printing and writing: the markdown report and the output files."""
    # Cheap checks first, so that a typo fails before minutes of TER.
    targets = _output_targets(args)
    systems_files = parse_named(args.system, "--system", "NAME=FILE")
    names = [name for name, _ in systems_files]
    score_files = segment_scores.parse_specs(args.segment_scores, names)
    check_outputs(_output_files(targets), _input_files(args, systems_files, score_files))
    metrics = parse_metrics(args.metrics)
    check_resampling(args.bootstrap, args.ar_trials, args.seed)
    bleu_tokenizer = _bleu_tokenizer(args) if "bleu" in metrics else None
    buckets = None
    if args.quantiles is None:
        edges = DEFAULT_EDGES if args.edges is None else parse_edges(args.edges)
        buckets = buckets_from_edges(edges)
    check_baseline(args.baseline, names)
    if args.by_reference_length and args.length_file:
        raise InputError("--length-file already gives the lengths; drop --by-reference-length")
    if args.workers < 1:
        raise InputError("--workers must be at least 1")
    length_options = {"--length-file": args.length_file, "--bpe-codes": args.bpe_codes,
                      "--spm-model": args.spm_model}
    given = [f"{option} {value}" for option, value in length_options.items() if value]
    if args.length_unit == "char" and given:
        raise InputError(f"--length-unit char counts the characters of the text itself; "
                         f"drop {given[0]}")
    for option, path in (("--bpe-codes", args.bpe_codes), ("--spm-model", args.spm_model)):
        if path:
            existing_file(path, option)
    cache = None if args.no_cache else StatisticsCache(args.cache_dir or default_directory())
    if cache is not None:
        cache.create()

    start_time = time.perf_counter()
    source = read_segments(args.source, "source", "--source")
    references = [read_segments(path, "reference", "--ref") for path in args.ref]
    systems = {name: read_segments(path, "system", f"--system {name}") for name, path in systems_files}
    length_lines = read_lines(args.length_file, "--length-file") if args.length_file else None
    scores = {metric: {name: segment_scores.read_scores(paths[0],
                                                        f"{segment_scores.OPTION} {metric}:{name}")
                       for name, paths in by_system.items()}
              for metric, by_system in score_files.items()}
    scored = list(zip(args.ref, references))
    scored += [(path, systems[name]) for name, path in systems_files]
    parallel = [(args.source, source)] + scored
    if length_lines is not None:
        parallel.append((args.length_file, length_lines))
    parallel += [(by_system[name][0], scores[metric][name])
                 for metric, by_system in score_files.items() for name in by_system]
    check_parallel(parallel)
    if not args.allow_subwords:
        for path, segments in scored:
            check_no_subword_markers(path, segments)
    if args.tokenize is None and bleu_tokenizer == "13a":
        check_segmented(
            args.ref[0], references[0],
            "BLEU's 13a tokenizer would take whole clauses for words: pass --target-lang (zh, "
            "ja, ko: sacrebleu's tokenizer for that language) or --tokenize (e.g. char)",
        )
    if "ter" in metrics:
        check_segmented(
            args.ref[0], references[0],
            "TER would take whole clauses for words: leave it out (--metrics bleu,chrf)",
        )

    lengths, length_label = _lengths(args, source, references[0], length_lines)
    if buckets is None:
        buckets = buckets_from_edges(quantile_edges(lengths, args.quantiles))
    if args.tokenize != "none":
        _warn_if_tokenized(systems)

    # stage lines with times on stderr, for reports big enough to take a while
    progress = _progress_line if len(source) * len(systems) >= PROGRESS_MIN_PAIRS else None
    if progress is not None:
        progress(f"inputs read: {len(source)} sentences, {len(systems)} systems, "
                 f"{time.perf_counter() - start_time:.1f} s")
    report = evaluate_by_length(
        lengths, references, systems, buckets, metrics=metrics, baseline=args.baseline,
        tokenize=args.tokenize, lowercase=args.lowercase, target_lang=args.target_lang,
        n_bootstrap=args.bootstrap, seed=args.seed, paired_test=args.paired_test,
        ar_trials=args.ar_trials, workers=args.workers,
        cache=cache, progress=progress, segment_scores=scores,
    )
    start_time = time.perf_counter()
    markdown = render.markdown_table(report, args.title)
    failures = parse_named(args.failed, "--failed", "NAME=WHY")
    if failures:
        markdown += "\nNot in this report, because they failed:\n\n" + "".join(
            f"- {name}: {why}\n" for name, why in failures)
    outputs = _rendered_outputs(args, targets, report, markdown, lengths, length_label)
    if progress is not None:
        progress(f"outputs rendered: {time.perf_counter() - start_time:.1f} s")
    return markdown, outputs


def _rendered_outputs(args, targets, report, markdown, lengths, length_label) -> Dict[Path, bytes]:
    contents: Dict[Path, bytes] = {}
    renderers = {
        "markdown": lambda: markdown.encode("utf-8"),
        "json": lambda: render.json_text(report).encode("utf-8"),
        "csv": lambda: render.csv_text(report).encode("utf-8"),
        "latex": lambda: render.latex_table(report, args.title).encode("utf-8"),
    }
    for kind, (_, path) in targets.items():
        if kind in renderers:
            contents[path] = renderers[kind]()
    if "plot" in targets:
        prefix = targets["plot"][1]
        for fmt, data in render.bucket_plot(report, args.title, PLOT_FORMATS).items():
            contents[_with_format(prefix, fmt)] = data
    if "histogram" in targets:
        path = targets["histogram"][1]
        contents[path] = render.length_histogram(
            lengths, report.buckets, args.train_limit, args.title, length_label,
            fmt=path.suffix[1:].lower(),
        )
    return contents


def _output_targets(args) -> Dict[str, Tuple[str, Path]]:
    """Output kind -> (the option that names it, its path): --out-dir's defaults,
    overridden by the individual flags."""
    targets = {}
    if args.out_dir:
        targets = {kind: (f"--out-dir ({name})", Path(args.out_dir) / name)
                   for kind, name in OUT_DIR_NAMES.items()}
    for kind in ("json", "csv", "latex", "plot", "histogram"):
        if getattr(args, kind):
            targets[kind] = (f"--{kind}", Path(getattr(args, kind)))
    if "plot" in targets and targets["plot"][1].suffix.lower()[1:] in PLOT_FORMATS:
        # a prefix given with an extension
        targets["plot"] = (targets["plot"][0], targets["plot"][1].with_suffix(""))
    if "histogram" in targets and targets["histogram"][1].suffix.lower()[1:] not in HISTOGRAM_FORMATS:
        raise InputError(f"--histogram needs a .png, .pdf or .svg path, got {targets['histogram'][1]}")
    return targets


def _output_files(targets) -> List[Tuple[str, Path]]:
    """(option, path) of every file the targets make: the plot is one per format."""
    files = []
    for kind, (option, path) in targets.items():
        paths = [_with_format(path, fmt) for fmt in PLOT_FORMATS] if kind == "plot" else [path]
        files += [(option, path) for path in paths]
    return files


def _input_files(args, systems_files, score_files) -> List[Tuple[str, Path]]:
    inputs = [("--source", args.source)] + [("--ref", path) for path in args.ref]
    inputs += [(f"--system {name}", path) for name, path in systems_files]
    inputs += [(option, getattr(args, option[2:].replace("-", "_")))
               for option in ("--length-file", "--bpe-codes", "--spm-model")]
    inputs += [(f"{segment_scores.OPTION} {metric}:{name}", paths[0])
               for metric, by_system in score_files.items() for name, paths in by_system.items()]
    return [(option, Path(path)) for option, path in inputs if path]


def _with_format(prefix: Path, fmt: str) -> Path:
    return prefix.with_name(f"{prefix.name}.{fmt}")


def _lengths(args, source, first_reference, length_lines) -> Tuple[List[int], str]:
    """Sentence lengths and what they count, for the histogram's axis."""
    if length_lines is not None:
        check_segmented(args.length_file, length_lines, "its whitespace tokens are no length: "
                        "give the segmented text (the subwords the system reads)")
        label = f"length (tokens of {Path(args.length_file).name})"
        return whitespace_lengths(length_lines), label
    if args.by_reference_length:
        path, text, side = args.ref[0], first_reference, "reference"
    else:
        path, text, side = args.source, source, "source"
    if args.bpe_codes:
        return bpe_lengths(text, args.bpe_codes), f"{side} length (BPE subwords)"
    if args.spm_model:
        return sentencepiece_lengths(text, args.spm_model), f"{side} length (SentencePiece pieces)"
    if args.length_unit == "char":
        return char_lengths(text), f"{side} length (characters)"
    check_segmented(path, text, "its whitespace tokens are no length: count its subwords with "
                    "--spm-model or --bpe-codes, give them with --length-file, or count "
                    "characters with --length-unit char")
    return whitespace_lengths(text), f"{side} length (whitespace tokens)"


def _bleu_tokenizer(args) -> str:
    """The name sacrebleu gives the BLEU tokenizer of these options; before the scoring,
    so that a missing extra package (MeCab for ja and ko) is an error now."""
    config = MetricConfig("bleu", args.tokenize, args.lowercase, args.target_lang)
    try:
        return config.build().tokenizer_signature
    except (RuntimeError, ImportError, OSError) as err:
        option = "--tokenize" if args.tokenize else "--target-lang"
        raise InputError(f"BLEU's tokenizer for {option} {args.tokenize or args.target_lang} is "
                         f"not available: {' '.join(str(err).split())}") from None


def _progress_line(line: str) -> None:
    print(f"[relpos-report] {line}", file=sys.stderr, flush=True)


def _warn_if_tokenized(systems: Dict[str, List[str]]) -> None:
    for name, hyps in systems.items():
        tokenized = sum(hyp.endswith(" .") for hyp in hyps)
        if tokenized >= _TOKENIZED_LINES_WARNING:
            print(f"warning: {tokenized} lines of {name} end in a tokenized period; "
                  "pass --tokenize none if the text is tokenized on purpose", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
