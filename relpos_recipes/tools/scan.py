"""SCAN (Lake and Baroni 2018), generated from its grammar: commands and their action sequences.

SCAN is the standard length-generalization benchmark for encoder-decoder models.  Its data
set is the whole language of a small grammar, and its length splits are a deterministic
function of the output length, so generating it here gives the public files' pairs without a
download.  The grammar (Lake and Baroni 2018, supplementary material, Table 1)::

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D[1] opposite D[2] | D[1] around D[2] | D | U
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

where ``D[1] opposite D[2]`` and ``D[1] around D[2]`` share a direction: ``walk opposite left``,
``turn around right``.  Its interpretation (the same table)::

    [[walk]] = I_WALK   [[look]] = I_LOOK   [[run]] = I_RUN   [[jump]] = I_JUMP
    [[turn left]] = I_TURN_LEFT            [[u left]] = I_TURN_LEFT [[u]]
    [[turn opposite left]] = I_TURN_LEFT I_TURN_LEFT
    [[u opposite left]] = [[turn opposite left]] [[u]]
    [[turn around left]] = I_TURN_LEFT x 4
    [[u around left]] = (I_TURN_LEFT [[u]]) x 4
    [[x twice]] = [[x]] [[x]]              [[x thrice]] = [[x]] [[x]] [[x]]
    [[x1 and x2]] = [[x1]] [[x2]]           [[x1 after x2]] = [[x2]] [[x1]]

and the same with right.  That is 34 verb phrases, 102 simple commands and 20,910 commands in
all, with 1 to 48 actions.

The splits, by the number of actions of a command:

- ``length`` (Lake and Baroni): train on at most 22 actions (16,990 pairs), test on the rest
  (24 to 48 actions, 3,920 pairs; no command has 23), in the public repository's files
  ``tasks_train_length.txt`` and ``tasks_test_length.txt``;
- ``cutoff:C`` (Newman et al. 2020; Csordas et al. 2021): the commands of at most C actions,
  less a held-out dev set (a tenth of them, drawn with ``--seed``) drawn from the same lengths,
  for training; every longer command for test;
- ``all``: every command, ``tasks.txt``.

With ``--parallel`` the split is written as a parallel corpus instead, for the recipe
(scripts/reproduce/scan.sh, which prepares it with ``--segmentation none``): ``PART.in`` the
commands and ``PART.out`` their actions, a pair a line, for the parts ``train``, ``dev`` and
``test``.  The length split has no dev set of its own (its training set is the published one,
whole): its ``dev`` is a tenth of its training pairs, drawn as a cutoff split's and kept in
training, which only follows the training loss.  ``--every K`` keeps each part's every K-th
pair (the recipe's SMOKE=1 sample).

Lines are ``IN: <command> OUT: <actions>``, the public files' format; commands come in the
grammar's order (the public files are shuffled: the same pairs, in another order).  Only
``random.Random.random()`` is drawn from, which Python keeps stable across versions, so a seed
gives byte-identical dev sets everywhere.
"""
import argparse
import os
import random
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from . import write_lines

PRIMITIVES = ("walk", "look", "run", "jump")
DIRECTIONS = ("left", "right")
TURN = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}
REPEATS = {"twice": 2, "thrice": 3}
# the standard length split's limit: train on at most this many actions
LENGTH_SPLIT_TRAIN_MAX = 22
# the cutoffs of Csordas et al. (2021), Table 5, and Newman et al. (2020)
PUBLISHED_CUTOFFS = (22, 24, 25, 26, 27, 28, 30, 32, 33, 36, 40)
DEV_FRACTION = 0.1
DEFAULT_SEED = 1234

Pair = Tuple[str, Tuple[str, ...]]  # (command, actions)


def action(primitive: str) -> str:
    return "I_" + primitive.upper()


def verb_phrases() -> List[Pair]:
    """The 34 phrases V, in the grammar's order, with their actions."""
    phrases: List[Pair] = [(u, (action(u),)) for u in PRIMITIVES]
    for direction in DIRECTIONS:
        turn = TURN[direction]
        phrases.append((f"turn {direction}", (turn,)))
        phrases.extend((f"{u} {direction}", (turn, action(u))) for u in PRIMITIVES)
    for direction in DIRECTIONS:
        turn = TURN[direction]
        phrases.append((f"turn opposite {direction}", (turn, turn)))
        phrases.extend((f"{u} opposite {direction}", (turn, turn, action(u))) for u in PRIMITIVES)
    for direction in DIRECTIONS:
        turn = TURN[direction]
        phrases.append((f"turn around {direction}", (turn,) * 4))
        phrases.extend((f"{u} around {direction}", (turn, action(u)) * 4) for u in PRIMITIVES)
    return phrases


def simple_commands() -> List[Pair]:
    """The 102 commands S: each phrase alone, twice and thrice."""
    commands: List[Pair] = []
    for phrase, actions in verb_phrases():
        commands.append((phrase, actions))
        commands.extend((f"{phrase} {word}", actions * times) for word, times in REPEATS.items())
    return commands


def all_pairs() -> List[Pair]:
    """All 20,910 commands C with their actions: each S alone, then ``S and S``, ``S after S``."""
    simple = simple_commands()
    pairs = list(simple)
    pairs.extend((f"{first} and {second}", a1 + a2) for first, a1 in simple for second, a2 in simple)
    pairs.extend((f"{first} after {second}", a2 + a1) for first, a1 in simple for second, a2 in simple)
    return pairs


def line(pair: Pair) -> str:
    command, actions = pair
    return f"IN: {command} OUT: {' '.join(actions)}"


def parse_line(text: str, where: str = "line") -> Pair:
    """(command, actions) of a line of the public format; ValueError naming ``where`` if it is not one."""
    if not text.startswith("IN: ") or " OUT: " not in text:
        raise ValueError(f"{where}: expected 'IN: <command> OUT: <actions>', got {text[:60]!r}")
    command, actions = text[len("IN: "):].split(" OUT: ", 1)
    return command, tuple(actions.split())


def length_split(pairs: Sequence[Pair]) -> Dict[str, List[Pair]]:
    """Lake and Baroni's length split: train on at most 22 actions, test on the longer ones."""
    return {
        "train": [p for p in pairs if len(p[1]) <= LENGTH_SPLIT_TRAIN_MAX],
        "test": [p for p in pairs if len(p[1]) > LENGTH_SPLIT_TRAIN_MAX],
    }


def cutoff_split(pairs: Sequence[Pair], cutoff: int, seed: int = DEFAULT_SEED,
                 dev_fraction: float = DEV_FRACTION) -> Dict[str, List[Pair]]:
    """The length-cutoff resplit: the pairs of at most ``cutoff`` actions, a ``dev_fraction`` of
    them held out (each drawn independently with that probability) as an IID dev set, for
    training; every longer pair for test."""
    longest = max(len(actions) for _, actions in pairs)
    if not 1 <= cutoff < longest:
        raise ValueError(f"a cutoff must leave pairs on both sides (1 to {longest - 1} actions), got {cutoff}")
    draw = random.Random(seed).random
    split: Dict[str, List[Pair]] = {"train": [], "dev": [], "test": []}
    for pair in pairs:
        if len(pair[1]) > cutoff:
            split["test"].append(pair)
        else:
            split["dev" if draw() < dev_fraction else "train"].append(pair)
    return split


def parse_split(text: str) -> Tuple[str, Optional[int]]:
    """('length' | 'all', None) or ('cutoff', C) from ``--split``; ValueError saying what is expected."""
    if text in ("length", "all"):
        return text, None
    name, _, value = text.partition(":")
    if name == "cutoff" and value.isdigit():
        return name, int(value)
    raise ValueError(f"--split: expected 'length', 'all' or 'cutoff:C' (C a number of actions, e.g. "
                     f"cutoff:26), got {text!r}")


def split_files(split: str, cutoff: Optional[int], seed: int) -> Dict[str, List[Pair]]:
    """File name -> pairs for one ``--split``."""
    pairs = all_pairs()
    if split == "all":
        return {"tasks.txt": pairs}
    if split == "length":
        return {f"tasks_{part}_length.txt": chosen for part, chosen in length_split(pairs).items()}
    return {f"tasks_{part}_cutoff{cutoff}.txt": chosen
            for part, chosen in cutoff_split(pairs, cutoff, seed).items()}


def parallel_files(split: str, cutoff: Optional[int], seed: int, every: int = 1) -> Dict[str, List[str]]:
    """File name -> lines of ``--parallel``: PART.in and PART.out for train, dev and test,
    each part's every ``every``-th pair (a sample for a smoke run)."""
    pairs = all_pairs()
    if split == "cutoff":
        parts = cutoff_split(pairs, cutoff, seed)
    elif split == "length":
        parts = length_split(pairs)
        draw = random.Random(seed).random  # one draw per training pair, as cutoff_split's
        parts["dev"] = [pair for pair in parts["train"] if draw() < DEV_FRACTION]
    else:
        raise ValueError("--parallel: for --split length or cutoff:C (a training and a test set)")
    files = {}
    for part in ("train", "dev", "test"):
        files[f"{part}.in"] = [command for command, _ in parts[part][::every]]
        files[f"{part}.out"] = [" ".join(actions) for _, actions in parts[part][::every]]
    return files


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m relpos_recipes.tools.scan",
        description="Generate SCAN (Lake and Baroni 2018) from its grammar and write a split in the "
        "public repository's format, 'IN: <command> OUT: <actions>' a line. The grammar and the "
        "splits are in the module docstring (python -m pydoc relpos_recipes.tools.scan).",
    )
    parser.add_argument("--split", required=True,
                        help="length (tasks_{train,test}_length.txt), cutoff:C (tasks_{train,dev,test}_cutoffC.txt: "
                        "train and an IID dev set on at most C actions, test on the longer ones), or all (tasks.txt)")
    parser.add_argument("--out-dir", required=True, help="folder to write the files to (made if missing)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed of the cutoff split's dev set (default: {DEFAULT_SEED})")
    parser.add_argument("--parallel", action="store_true",
                        help="write {train,dev,test}.{in,out} (commands and actions, a line each) instead")
    parser.add_argument("--every", type=int, default=1,
                        help="with --parallel: each part's every K-th pair only (a sample; default 1: all)")
    args = parser.parse_args(argv)
    if args.every < 1 or (args.every > 1 and not args.parallel):
        parser.error(f"--every: a positive number of pairs, with --parallel; got {args.every}")
    try:
        split, cutoff = parse_split(args.split)
        if args.parallel:
            files = parallel_files(split, cutoff, args.seed, args.every)
        else:
            files = {name: [line(pair) for pair in pairs]
                     for name, pairs in split_files(split, cutoff, args.seed).items()}
    except ValueError as error:
        parser.error(str(error))
    if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
        parser.error(f"--out-dir: {args.out_dir} is a file, expected a folder")
    write_lines([(os.path.join(args.out_dir, name), lines) for name, lines in files.items()])
    counts = ", ".join(f"{name} {len(lines)}" for name, lines in files.items())
    print(f"wrote SCAN to {args.out_dir}: {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
