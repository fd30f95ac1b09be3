"""Wall time of the report on a newstest_all-sized case.

    python -m relpos_analysis.benchmark [--workers 2] [--systems 5] [--bootstrap 1000] [--anchor]

Builds newstest_all De->En (newstest2008-2018 without 2015: 28,075 sentences) from
../shared/data/wmt-newstest/de-en beside the checkout, makes synthetic "systems" by
perturbing the English references deterministically (dropped and swapped words, so that
TER has shifts to search), and times the whole command-line run with BLEU and TER: first
with an empty statistics cache (the time that counts), then once more with one system
added, which computes only that system.  ``--anchor`` also times sacrebleu's own command
line on the same whole-set work for two systems (paired bootstrap test of BLEU and TER).
"""
import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Tuple

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
    """Writes the source, reference and system files; returns the report's arguments
    (``--system`` last, one per system) and the number of sentences."""
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
    parser.add_argument("--anchor", action="store_true",
                        help="also time sacrebleu's command line on two of the systems")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: no newstest data at {args.data}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        case, n_sentences = build_case(args.data, directory, args.systems + 1)
        options = ["--metrics", args.metrics, "--bootstrap", str(args.bootstrap),
                   "--workers", str(args.workers), "--out-dir", str(directory / "out"),
                   "--cache-dir", str(directory / "cache")]
        described = (f"{n_sentences} sentences, metrics {args.metrics}, {args.bootstrap} bootstrap "
                     f"resamples, {args.workers} workers")
        timings = []
        # the last --system NAME=FILE pair is the added system
        for label, systems_case in ((f"{args.systems} systems, empty cache", case[:-2]),
                                    (f"{args.systems + 1} systems, the first {args.systems} "
                                     "cached", case)):
            status, elapsed, cpu = _timed(lambda: report.main(systems_case + options))
            if status != 0:
                return status
            timings.append(f"{label}: wall time {elapsed:.1f} s, CPU time {cpu:.1f} s")
        if args.anchor:
            references, hypotheses = case[3], [spec.split("=", 1)[1] for spec in case[5:9:2]]
            command = [sys.executable, "-m", "sacrebleu", references, "-i", *hypotheses,
                       "-m", "bleu", "ter", "--paired-bs", "--paired-bs-n", str(args.bootstrap),
                       # its default, JSON, fails on the paired results (float32) after all the work
                       "--format", "text"]
            status, elapsed, cpu = _timed(lambda: subprocess.run(
                command, stdout=subprocess.DEVNULL, check=False).returncode)
            timings.append(f"anchor, sacrebleu {' '.join(command[3:])} (2 systems, "
                           f"exit status {status}): wall time {elapsed:.1f} s, CPU time {cpu:.1f} s")
    print(f"\n{described}", *timings, sep="\n", file=sys.stderr)
    return 0


def _timed(run: Callable[[], int]) -> Tuple[int, float, float]:
    """run()'s result, wall seconds and CPU seconds (its own and its children's)."""
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    status = run()
    return status, time.perf_counter() - start, _cpu_seconds() - cpu_start


if __name__ == "__main__":
    sys.exit(main())
