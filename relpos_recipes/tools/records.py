"""The small records of a prepared folder: ``KEY=VALUE`` files such as ``segmentation.env``,
``testsets.env`` and ``overlap.env``, and a built test set's ``meta.env``, written after
checking that its files have one line per pair.
``python -m relpos_recipes.tools.records {write-env,testset-meta} ...``.
"""
import argparse
import sys
from pathlib import Path

from . import count_lines, fail, run_parsed


def write_env(a) -> None:
    with open(a.out, "w", encoding="utf-8") as out:
        for setting in a.settings:
            if "=" not in setting:
                fail(f"write-env: expected KEY=VALUE, got {setting!r}")
            out.write(setting + "\n")


def testset_meta(a) -> None:
    """meta.env of a built test set, after checking that its files have one line per pair."""
    folder = Path(a.dir)
    counts = {name: count_lines(folder / name) for name in
              (f"raw.{a.src}", f"raw.{a.tgt}", f"seg.{a.src}", f"seg.{a.tgt}")}
    if len(set(counts.values())) != 1:
        fail(f"test set {a.name} in {folder}: its files differ in lines ("
             + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")")
    lines = counts[f"raw.{a.src}"]
    with open(a.out, "w", encoding="utf-8") as out:
        out.write(f"NAME={a.name}\nPREP_DIR=../..\nPAIR={a.pair}\nSRC={a.src}\nTGT={a.tgt}\nLINES={lines}\n")
    print(f"{a.name}: {lines} pairs -> {folder}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m relpos_recipes.tools.records", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="tool", required=True)

    p = sub.add_parser("write-env")
    p.add_argument("--out", required=True)
    p.add_argument("settings", nargs="*")
    p.set_defaults(run=write_env)

    p = sub.add_parser("testset-meta")
    for option in ("--dir", "--name", "--pair", "--src", "--tgt", "--out"):
        p.add_argument(option, required=True)
    p.set_defaults(run=testset_meta)
    return ap


def main(argv=None) -> int:
    return run_parsed(parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
