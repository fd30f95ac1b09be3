"""Wall time of the report on a newstest_all-sized case (SPEC §4).

    python -m analysis.benchmark [--workers 2] [--systems 5] [--bootstrap 1000]

Builds newstest_all De->En (newstest2008-2018 without 2015: 28,075 sentences) from
../shared/data/wmt-newstest/de-en beside the checkout, makes synthetic "systems" by
perturbing the English references deterministically (dropped and swapped words, so that
TER has shifts to search), and times the whole command-line run with BLEU and TER.
"""
import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

from . import report

NEWSTEST_ALL_YEARS = [2008, 2009, 2010, 2011, 2012, 2013, 2014, 2016, 2017, 2018]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt-newstest" / "de-en"


def perturbed(sentence: str, variant: int) -> str:
    """The sentence with every (variant+5)-th word dropped and every (variant+4)-th
    word swapped with its neighbour."""
    words = [w for i, w in enumerate(sentence.split()) if i % (variant + 5) != variant % 5]
    for i in range(variant % 3, len(words) - 1, variant + 4):
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def build_case(data: Path, directory: Path, n_systems: int) -> Tuple[List[str], int]:
    """Writes the source, reference and system files; returns the report's arguments and
    the number of sentences."""
    def concatenated(language):
        return "".join((data / f"newstest{year}.{language}").read_text(encoding="utf-8")
                       for year in NEWSTEST_ALL_YEARS)

    (directory / "newstest_all.de").write_text(concatenated("de"), encoding="utf-8")
    reference = concatenated("en")
    (directory / "newstest_all.en").write_text(reference, encoding="utf-8")
    argv = ["--source", str(directory / "newstest_all.de"), "--ref", str(directory / "newstest_all.en")]
    for variant in range(n_systems):
        path = directory / f"system{variant}.en"
        path.write_text("".join(perturbed(line, variant) + "\n" for line in reference.splitlines()),
                        encoding="utf-8")
        argv += ["--system", f"system{variant}={path}"]
    return argv, len(reference.splitlines())


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the statistics workers): on a
    machine shared with other jobs, this shows what the wall time would be on free cores."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with newstestYYYY.{de,en}")
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--metrics", default="bleu,ter")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: no newstest data at {args.data}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        case, n_sentences = build_case(args.data, directory, args.systems)
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        status = report.main(case + [
            "--metrics", args.metrics, "--bootstrap", str(args.bootstrap),
            "--workers", str(args.workers), "--out-dir", str(directory / "out"),
        ])
        elapsed, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    print(
        f"\nwall time: {elapsed:.1f} s, CPU time {cpu:.1f} s ({n_sentences} sentences, "
        f"{args.systems} systems, metrics {args.metrics}, {args.bootstrap} bootstrap resamples, "
        f"{args.workers} workers)",
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main())
