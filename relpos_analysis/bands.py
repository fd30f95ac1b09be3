"""The band matrix of one or more schemes, each trained once per length band (Variš and Bojar
2021, "Sequence length is a domain"): every train band x test band, BLEU and the failure
columns with 95% bootstrap intervals, in every format, and a heatmap with the diagonal marked.

    relpos-bands --ref test.en --length-file test/longer-side \\
        --train-bands 1:10,11:20,21:30 [--test-bands 1:10,...,31:40] \\
        --system abs=abs-1-10/hyp.txt,abs-11-20/hyp.txt,abs-21-30/hyp.txt --system rel=... \\
        --out-dir bands/

(``python -m relpos_analysis.bands`` where the package is not installed.)  A system gives a
file per train band, in --train-bands' order.  The files are written when
everything is computed (all or nothing), then the markdown tables go to stdout; bad input is
a one-line ``error: ...`` on stderr (exit status 2), before any scoring.  The model is
relpos_analysis.bands_model's, the tables and the heatmap relpos_analysis.bands_render's.
"""
import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from . import bands_model, bands_render
from .buckets import Bucket, parse_bands
from .cache import StatisticsCache, default_directory
from .cli import Parser, check_outputs, every_system_or_none, run_command
from .report_model import ScoringOptions
from .failures import SHORT_RATIO
from .inputs import InputFiles, read_inputs, segmented_lengths
from .io import InputError, parse_named_lists
from .metrics import METRICS, TOKENIZERS, parse_metrics

OUT_DIR_NAMES = {"markdown": "bands.md", "json": "bands.json", "csv": "bands.csv", "latex": "bands.tex",
                 "heatmap": "heatmap"}  # heatmap.png and heatmap.pdf
HEATMAP_FORMATS = ("png", "pdf")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="relpos-bands", description="The band matrix: systems trained on one band of lengths "
                                                     "each, scored on every band of the test set.")
    parser.add_argument("--ref", required=True, help="the reference translations")
    parser.add_argument("--length-file", required=True, metavar="F",
                        help="each sentence's length is the whitespace tokens of F's line (the test set's "
                             "longer-side file, or its segmented source or target: what the bands measure)")
    parser.add_argument("--train-bands", required=True, metavar="LO:HI,...",
                        help="the bands the systems were trained on, in the order of each --system's files")
    parser.add_argument("--test-bands", metavar="LO:HI,...", help="the bands to score (default: --train-bands)")
    parser.add_argument("--system", action="append", required=True, metavar="NAME=F,F,...",
                        help="a scheme: its translations of the test set, a file per train band")
    parser.add_argument("--system-scores", action="append", default=[], metavar="NAME=F,F,...",
                        help="a scheme's mean log2-probability per token of each translation (the translate "
                             "tool's hyp.scores), a file per train band: the failure column 'log2 p/token'; "
                             "every scheme or none")
    parser.add_argument("--metrics", default="bleu", help=f"comma-separated subset of {','.join(METRICS)} (default: bleu)")
    parser.add_argument("--tokenize", choices=TOKENIZERS, metavar="TOK",
                        help="BLEU tokenizer (default: 13a, or the one for --target-lang); none for tokenized text")
    parser.add_argument("--target-lang", default="", metavar="LANG")
    parser.add_argument("--lowercase", action="store_true")
    parser.add_argument("--short-ratio", type=float, default=SHORT_RATIO, metavar="R",
                        help=f"a translation with fewer tokens than R times its reference's is 'short' "
                             f"(default: {SHORT_RATIO})")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                        help="resamples for the intervals and the paired tests against the diagonal (default "
                             "1000; 0: none)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--workers", type=int, default=2)
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", metavar="DIR")
    cache.add_argument("--no-cache", action="store_true")
    parser.add_argument("--allow-subwords", action="store_true",
                        help="score translations that still carry BPE or SentencePiece markers")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="write bands.md/.json/.csv/.tex and heatmap.png/.pdf")
    parser.add_argument("--title", metavar="T")
    return parser


def bands_option(text: str, option: str) -> List[Bucket]:
    try:
        return parse_bands(text)
    except InputError as err:
        raise InputError(f"{option}: {err}") from None


def main(argv=None) -> int:
    return run_command(build_parser, BandsRequest.from_args, run, argv)


@dataclass(frozen=True)
class BandsRequest:
    """A band matrix as the command line asks for it, parsed and checked before any input is read."""
    files: InputFiles  # a system's files (and --system-scores') one per train band
    train_bands: List[Bucket]
    test_bands: List[Bucket]
    targets: Dict[str, Path]  # output kind -> its path (the heatmap's without its format)
    options: ScoringOptions
    allow_subwords: bool
    title: Optional[str]

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "BandsRequest":
        train_bands = bands_option(args.train_bands, "--train-bands")
        test_bands = bands_option(args.test_bands, "--test-bands") if args.test_bands else train_bands
        files = dict(parse_named_lists(args.system, "--system", "NAME=F,F,..."))
        for name, paths in files.items():
            if len(paths) != len(train_bands):
                raise InputError(f"--system {name}: {len(paths)} files for the {len(train_bands)} --train-bands; "
                                 "expected one per band, in their order")
        score_files = every_system_or_none(args.system_scores, "--system-scores",
                                           {name: len(train_bands) for name in files}, per_seed=True)
        targets = {kind: Path(args.out_dir) / name for kind, name in OUT_DIR_NAMES.items()} if args.out_dir else {}
        outputs = [(f"--out-dir ({path.name})", path) for kind, path in targets.items() if kind != "heatmap"]
        outputs += [("--out-dir (heatmap)", targets["heatmap"].with_suffix(f".{fmt}")) for fmt in HEATMAP_FORMATS
                    if "heatmap" in targets]
        inputs = InputFiles(references=(args.ref,), length_file=args.length_file,
                            systems={name: tuple(paths) for name, paths in files.items()},
                            log_probs={name: tuple(paths) for name, paths in score_files.items()})
        check_outputs(outputs, inputs.named())
        options = ScoringOptions(metrics=tuple(parse_metrics(args.metrics)), tokenize=args.tokenize,
                                 lowercase=args.lowercase, target_lang=args.target_lang, n_bootstrap=args.bootstrap,
                                 seed=args.seed, short_ratio=args.short_ratio, workers=args.workers,
                                 cache=None if args.no_cache else StatisticsCache(args.cache_dir or default_directory()))
        options.check()
        return cls(files=inputs, train_bands=train_bands, test_bands=test_bands, targets=targets, options=options,
                   allow_subwords=args.allow_subwords, title=args.title)


def run(request: BandsRequest) -> Tuple[str, Dict[Path, bytes]]:
    """The markdown tables and the output files."""
    texts = read_inputs(request.files, request.allow_subwords)
    lengths = segmented_lengths(texts.given)
    options = request.options
    if options.cache is not None:
        options.cache.create()
    reference = texts.references[0].lines
    matrices = [bands_model.band_matrix(name, lengths, [reference], [text.lines for text in seeds],
                                        request.train_bands, request.test_bands, options, texts.log_probs.get(name))
                for name, seeds in texts.systems.items()]
    return _rendered(request, matrices)


def _rendered(request: BandsRequest, matrices) -> Tuple[str, Dict[Path, bytes]]:
    title, targets = request.title, request.targets
    markdown = bands_render.markdown(matrices, title)
    contents: Dict[Path, bytes] = {}
    if targets:
        contents[targets["markdown"]] = markdown.encode("utf-8")
        contents[targets["json"]] = bands_render.json_text(matrices, title).encode("utf-8")
        contents[targets["csv"]] = bands_render.csv_text(matrices).encode("utf-8")
        contents[targets["latex"]] = bands_render.latex(matrices, title).encode("utf-8")
        metrics = request.options.metrics
        metric = "bleu" if "bleu" in metrics else metrics[0]
        for fmt, data in bands_render.heatmap(matrices, metric, title, HEATMAP_FORMATS).items():
            contents[targets["heatmap"].with_suffix(f".{fmt}")] = data
    return markdown, contents


if __name__ == "__main__":
    sys.exit(main())
