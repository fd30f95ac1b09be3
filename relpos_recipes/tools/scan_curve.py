"""SCAN's exact match against the training cutoff (Newman et al. 2020, Csordas et al. 2021): the
boards of the SCAN recipe's splits (relpos-leaderboard's board.json, ranked by exact match)
gathered into one record, one table and one figure.

    python -m relpos_recipes.tools.scan_curve --board cutoff26=26=RUN/cutoff26/board/board.json \\
        --board length=22=RUN/length/board/board.json --seeds 1,2,3 --updates 50000 --checkpoint last \\
        --out-dir RUN/summary

Each split's number is its board's exact match on every test pair longer than the split's
training limit (the whole test set): mean, sample sd and per-seed values over the seeds, and
the difference to the board's baseline on the seeds pooled with its 95% interval, for the free
and the oracle-length decoding (``SYSTEM-oracle`` on the board) of each system.  Writes
scan.json (the record), scan.md (also printed) and exact.png (exact match against the cutoff,
a line per system, free solid and oracle-length dashed; the standard length split, whose limit
is 22, as unjoined squares).
"""
import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from . import fail, write_record

ORACLE = "-oracle"  # the board's name of a system's oracle-length decoding
CHECKPOINTS = {"best": "the checkpoint of the best dev perplexity", "last": "the last checkpoint"}


def read_board(path: Path) -> dict:
    try:
        board = json.loads(path.read_text(encoding="utf-8"))
        records = board["records"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        fail(f"--board {path}: not a board.json of relpos-leaderboard ({err})")
    beyond = {record["system"]: record for record in records if record.get("set") == "beyond"}
    if not beyond or any("exact" not in record for record in beyond.values()):
        fail(f"--board {path}: no exact match beyond the training limit (a board made with --metrics "
             "...,exact is expected)")
    return {"baseline": board.get("baseline"), "beyond": beyond}


def score(record: Optional[dict]) -> Optional[dict]:
    if record is None or record.get("exact") is None:
        return None
    return {"mean": record["exact"], "sd": record["exact_sd"], "seeds": record["exact_seeds"],
            "difference": record.get("exact_diff"),
            "difference_ci": [record.get("exact_diff_ci_lo"), record.get("exact_diff_ci_hi")]}


def summary(boards: Sequence[tuple], seeds: List[int], updates: int, checkpoint: str) -> dict:
    """The record: per split (name, training limit, board) each system's free and oracle-length
    exact match; ``checkpoint``: which of each training's checkpoints translated (best, last)."""
    splits, systems, baseline = [], [], None
    for name, limit, path in boards:
        board = read_board(path)
        baseline = baseline or board["baseline"]
        free = [system for system, record in board["beyond"].items() if not record.get("oracle_of")]
        systems += [system for system in free if system not in systems]
        splits.append({
            "split": name, "train_limit": limit, "board": str(path),
            "test_pairs": next(iter(board["beyond"].values())).get("n"),
            "exact": {system: {"free": score(board["beyond"][system]),
                               "oracle": score(board["beyond"].get(system + ORACLE))} for system in free},
        })
    return {"metric": "exact match (%) on every test pair longer than the training limit", "baseline": baseline,
            "systems": systems, "seeds": seeds, "updates": updates, "checkpoint": checkpoint, "splits": splits}


def _cell(value: Optional[dict], baseline: bool) -> List[str]:
    if value is None:
        return ["—", "—"]
    mean = f"{value['mean']:.1f} ± {value['sd']:.1f}"
    lo, hi = value["difference_ci"]
    if baseline or value["difference"] is None:
        return [mean, ""]
    interval = f" [{lo:+.1f}, {hi:+.1f}]" if lo is not None else ""
    return [mean, f"{value['difference']:+.1f}{interval}"]


def budget(record: dict) -> str:
    """Seeds, updates and the checkpoint that translated, as the table's and the figure's titles
    say them (a record written before --checkpoint had the best one)."""
    return (f"{len(record['seeds'])} seed(s), {record['updates']:,} updates, "
            f"{CHECKPOINTS[record.get('checkpoint', 'best')]}")


def markdown(record: dict) -> str:
    base = record["baseline"]
    lines = [f"# SCAN: exact match beyond the training limit, {budget(record)}", "",
             f"| split | limit | test pairs | system | free | Δ free vs {base} [95% CI] | oracle length | "
             f"Δ oracle vs {base} free [95% CI] |", "|---|---|---|---|---|---|---|---|"]
    for split in record["splits"]:
        for system, value in split["exact"].items():
            cells = [split["split"], str(split["train_limit"]), str(split["test_pairs"]), system,
                     *_cell(value["free"], system == base), *_cell(value["oracle"], False)]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Exact match in %: mean ± sample sd over the seeds; Δ: the difference to the baseline's free "
              "decoding on the seeds pooled, with the 95% interval of paired bootstrap resampling (each split's "
              "board has the buckets and the tests)."]
    return "\n".join(lines) + "\n"


def figure(record: dict) -> bytes:
    from relpos_analysis.figures import figure_bytes, plt

    fig, axis = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    cutoffs = [split for split in record["splits"] if split["split"] != "length"]
    length = [split for split in record["splits"] if split["split"] == "length"]
    for k, system in enumerate(record["systems"]):
        color = colors[k % len(colors)]
        for decoding, style in (("free", "-"), ("oracle", "--")):
            label = f"{system} ({'oracle length' if decoding == 'oracle' else 'free'})"
            points = [(split["train_limit"], split["exact"][system][decoding]) for split in cutoffs
                      if system in split["exact"] and split["exact"][system][decoding]]
            if points:
                axis.errorbar([x for x, _ in points], [v["mean"] for _, v in points],
                              yerr=[v["sd"] for _, v in points], color=color, linestyle=style, marker="o",
                              capsize=3, label=label)
            for split in length:
                value = split["exact"].get(system, {}).get(decoding)
                if value:
                    # the squares name the system where no cutoff line does (a length split alone)
                    axis.errorbar([split["train_limit"]], [value["mean"]], yerr=[value["sd"]], color=color,
                                  marker="s", fillstyle="full" if decoding == "free" else "none", capsize=3,
                                  linestyle="none", label=None if points else label)
    axis.set_xlabel("training cutoff (actions)" + (" (squares: the length split)" if length else ""))
    axis.set_ylabel("exact match beyond the cutoff (%)")
    axis.set_ylim(-2, 102)
    axis.set_title(f"SCAN, {budget(record)}", fontsize="medium")
    axis.legend(fontsize="small")
    data = figure_bytes(fig, "png")
    plt.close(fig)
    return data


def board_spec(text: str) -> tuple:
    name, _, rest = text.partition("=")
    limit, _, path = rest.partition("=")
    if not (name and limit.isdigit() and path):
        raise argparse.ArgumentTypeError(f"expected SPLIT=LIMIT=BOARD_JSON, got '{text}'")
    return name, int(limit), Path(path)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.scan_curve",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--board", type=board_spec, action="append", required=True, metavar="SPLIT=LIMIT=JSON")
    parser.add_argument("--seeds", required=True, help="the training seeds, comma-separated")
    parser.add_argument("--updates", type=int, required=True, help="each model's training updates")
    parser.add_argument("--checkpoint", choices=sorted(CHECKPOINTS), required=True,
                        help="which checkpoint of each training translated")
    parser.add_argument("--out-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    record = summary(args.board, [int(seed) for seed in args.seeds.split(",")], args.updates, args.checkpoint)
    write_record(args.out_dir, ("scan.json", "scan.md", "exact.png"), record, markdown(record), figure(record))


if __name__ == "__main__":
    sys.exit(main())
