"""SCAN's exact match against training updates: each model's checkpoints along the way
(scan.sh --checkpoint-every K), decoded freely and at the oracle length, scored on the whole
test set, as Csordas et al. (2021) plot accuracy against training steps.

    python -m relpos_recipes.tools.scan_updates --ref RUN/cutoff26/data/testsets/test/raw.out \\
        --translation transformer_xl=1=1000=FREE_HYP=ORACLE_HYP ... --out-dir RUN/cutoff26/updates

Per system and number of updates: the mean, sample sd and per-seed values of exact match (%)
over the seeds that saved a checkpoint there (fairseq saves none at an update that ends an
epoch), free and at the oracle length.  Writes updates.json (the record), updates.md (also
printed) and updates.png (exact match against updates, a line per system, free solid and
oracle-length dashed).
"""
import argparse
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from relpos_analysis.io import InputError, read_lines
from relpos_analysis.metrics import exact_matches

from . import fail, write_record

DECODINGS = ("free", "oracle")


def translation_spec(text: str) -> tuple:
    parts = text.split("=")
    if len(parts) != 5 or not (parts[0] and parts[1].isdigit() and parts[2].isdigit() and parts[3] and parts[4]):
        raise argparse.ArgumentTypeError(f"expected SYSTEM=SEED=UPDATES=FREE_HYP=ORACLE_HYP, got '{text}'")
    return parts[0], int(parts[1]), int(parts[2]), Path(parts[3]), Path(parts[4])


def exact_percent(path: Path, references: List[str]) -> float:
    """Exact match (%) of the hypotheses in ``path`` against ``references``, line by line."""
    try:
        hypotheses = read_lines(path, "--translation")
    except InputError as err:
        fail(str(err))
    if len(hypotheses) != len(references):
        fail(f"--translation {path}: {len(hypotheses)} lines, but --ref has {len(references)}")
    return statistics.fmean(exact_matches(hypotheses, [references]))


def summary(references: List[str], translations: Sequence[tuple]) -> dict:
    """The record: per system, per number of updates, the exact match of each decoding over
    the seeds."""
    seen = set()
    values: Dict[str, Dict[int, Dict[str, Dict[int, float]]]] = {}
    for system, seed, updates, free, oracle in translations:
        if (system, seed, updates) in seen:
            fail(f"--translation {system}={seed}={updates} is given twice")
        seen.add((system, seed, updates))
        point = values.setdefault(system, {}).setdefault(updates, {decoding: {} for decoding in DECODINGS})
        point["free"][seed] = exact_percent(free, references)
        point["oracle"][seed] = exact_percent(oracle, references)

    def stats(by_seed: Dict[int, float]) -> dict:
        seeds = sorted(by_seed)
        scores = [by_seed[seed] for seed in seeds]
        return {"mean": statistics.fmean(scores), "sd": statistics.stdev(scores) if len(scores) > 1 else 0.0,
                "seeds": seeds, "values": scores}

    return {"metric": "exact match (%) on the whole test set", "test_pairs": len(references),
            "systems": {system: [{"updates": updates, **{decoding: stats(point[decoding]) for decoding in DECODINGS}}
                                 for updates, point in sorted(points.items())]
                        for system, points in values.items()}}


def markdown(record: dict, title: str) -> str:
    systems = list(record["systems"])
    lines = [f"# {title}", "", f"Exact match (%) on the {record['test_pairs']:,} test pairs: mean ± sample sd over "
             "the seeds (n: seeds), free decoding / oracle length.", "",
             "| updates | " + " | ".join(systems) + " |", "|--:|" + "--:|" * len(systems)]
    updates = sorted({point["updates"] for points in record["systems"].values() for point in points})
    for count in updates:
        cells = []
        for system in systems:
            point = next((p for p in record["systems"][system] if p["updates"] == count), None)
            cells.append("—" if point is None else
                         f"{point['free']['mean']:.1f} ± {point['free']['sd']:.1f} / "
                         f"{point['oracle']['mean']:.1f} ± {point['oracle']['sd']:.1f} "
                         f"(n={len(point['free']['seeds'])})")
        lines.append(f"| {count:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def figure(record: dict, title: str) -> bytes:
    from relpos_analysis.figures import figure_bytes, plt

    fig, axis = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (system, points) in enumerate(record["systems"].items()):
        for decoding, style in (("free", "-"), ("oracle", "--")):
            axis.errorbar([p["updates"] for p in points], [p[decoding]["mean"] for p in points],
                          yerr=[p[decoding]["sd"] for p in points], color=colors[k % len(colors)], linestyle=style,
                          marker="o", capsize=3,
                          label=f"{system} ({'oracle length' if decoding == 'oracle' else 'free'})")
    axis.set_xlabel("training updates")
    axis.set_ylabel("exact match on the test set (%)")
    axis.set_ylim(-2, 102)
    axis.set_title(title, fontsize="medium")
    axis.legend(fontsize="small")
    data = figure_bytes(fig, "png")
    plt.close(fig)
    return data


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.scan_updates",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, type=Path, help="the test set's actions, a line per pair")
    parser.add_argument("--translation", type=translation_spec, action="append", required=True,
                        metavar="SYSTEM=SEED=UPDATES=FREE_HYP=ORACLE_HYP")
    parser.add_argument("--title", default="SCAN: exact match against updates")
    parser.add_argument("--out-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        references = read_lines(args.ref, "--ref")
    except InputError as err:
        fail(str(err))
    record = summary(references, args.translation)
    write_record(args.out_dir, ("updates.json", "updates.md", "updates.png"), record, markdown(record, args.title),
                 figure(record, args.title))


if __name__ == "__main__":
    sys.exit(main())
