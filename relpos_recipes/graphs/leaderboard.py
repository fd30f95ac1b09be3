"""The leaderboard: every scheme trained on the demo's synthetic pair (or Tatoeba) with its own
learning rate, chosen on dev loss, and several seeds at it; the boards rank them by BLEU beyond
the training lengths.  OUT/data holds the data, OUT/leaderboard/models/ARCH-lrLR[-seedS] the
models, OUT/leaderboard/choice/ARCH.json each scheme's choice, OUT/leaderboard/SET the boards.

The graph has two re-plan points.  A scheme's other seeds train at the rate its choice step
chose: they are built once the choice is made (its job's later part).  The boards list the
schemes whose trainings failed: they are built once every scheme's job has finished.
"""
import argparse
import dataclasses
import json
import math
import re
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..engine import Display, Graph, Job, Later, Launch, Out, OutDir, Policy, ProgressConsole, Step, StepError, \
    run, unfinished
from ..engine.step import MANIFEST_DIR, REPO
from . import tool
from .archs import all_archs, check_archs
from .data import Concat, Prepared, concat_steps, preparation_of
from .environment import RECIPE_ENVIRONMENT, RecipeEnvironment
from .options import absolute, positive_int
from .presets import TATOEBA_LIMIT
from .reports import system_options
from .systems import (TOY, SystemsRun, absolute_out, demo_parser, systems_run, demo_training, folder_profile, print_outputs,
                      refuse_unless_ours, tatoeba_profile, train_step, translate_steps)


@dataclasses.dataclass
class Protocol:
    """How the leaderboard trains each scheme (Ruoss et al. 2023 and Kazemnejad et al. 2023
    select each scheme's learning rate on in-distribution validation data): every rate of the
    grid trained with the first seed until the dev loss (dev pairs within the training limit)
    has not improved for ``patience`` evaluations, one every ``validate_every`` updates, or
    ``cap`` updates; the rate with the lowest dev loss wins; the other seeds train at it."""

    grid: List[str]
    seeds: List[int]
    validate_every: int
    patience: int
    cap: int
    # a scheme's own grid, where its choice sat at the edge of the common one
    grids: Dict[str, List[str]] = dataclasses.field(default_factory=dict)

    def grid_of(self, arch: str) -> List[str]:
        return self.grids.get(arch, self.grid)

    def stopping(self) -> List[str]:
        every = str(self.validate_every)
        return ["--max-update", str(self.cap), "--validate-interval-updates", every, "--save-interval-updates", every,
                "--keep-interval-updates", "1", "--validate-interval", "1000000", "--save-interval", "1000000"]


def scheme_learning_rates(text: str):
    """ARCH=RATE,RATE,...: one scheme's own grid."""
    arch, equals, rates = text.partition("=")
    if not (equals and arch.strip()):
        raise argparse.ArgumentTypeError(f"expected ARCH=RATE,RATE,..., got '{text}'")
    return arch.strip(), learning_rates(rates)


def learning_rates(text: str) -> List[str]:
    """Positive learning rates separated by commas, none of them twice (1e-3 and 0.001 are one)."""
    rates = [r.strip() for r in text.split(",")]
    try:
        values = [float(r) for r in rates]
        if not rates or any(v <= 0 or not math.isfinite(v) for v in values):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive learning rates separated by commas, got '{text}'") from None
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"names a learning rate twice: '{text}'")
    return rates


class Leaderboard:
    """The leaderboard's steps, folders and jobs for one command line."""

    def __init__(self, run_: SystemsRun, protocol: Protocol):
        self.run = run_
        self.protocol = protocol

    def folder(self, arch: str, lr: str, seed: int) -> Path:
        name = f"{arch}-lr{lr}" + ("" if seed == self.protocol.seeds[0] else f"-seed{seed}")
        return self.run.out / "leaderboard" / "models" / name

    def choice_file(self, arch: str) -> Path:
        return self.run.out / "leaderboard" / "choice" / f"{arch}.json"

    def rate_file(self, arch: str) -> Path:
        return self.choice_file(arch).with_suffix(".lr")

    def choice(self, arch: str) -> dict:
        """What the scheme's choice step wrote (read only in a later part, once it ran; with
        no rate chosen where the step failed)."""
        failed = unfinished([self.choice_step(arch)])
        if failed:
            return {"grid": {}, "chosen": None, "failure": failed}
        try:
            return json.loads(self.choice_file(arch).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise StepError(f"{self.choice_file(arch)}: the choice of {arch}'s learning rate cannot be read "
                            f"({err}); delete it to choose again") from None

    def training(self, arch: str, lr: str, seed: int):
        p = self.protocol
        return demo_training(self.run, arch, seed, self.folder(arch, lr, seed), lr, p.stopping(), p.patience)

    def grid_step(self, arch: str, lr: str) -> Step:
        return train_step(self.run, self.training(arch, lr, self.protocol.seeds[0]))

    def choice_step(self, arch: str) -> Step:
        grid = self.protocol.grid_of(arch)
        folders = [self.folder(arch, lr, self.protocol.seeds[0]) for lr in grid]
        out = self.choice_file(arch)
        return Step(f"choose-{arch}", [tool("choose-lr"), "--out", Out(out), "--out-rate", Out(self.rate_file(arch)),
                                       *[f"{lr}={folder}" for lr, folder in zip(grid, folders)]],
                    home=out.parent, root=self.run.out, inputs=[f / "train.log" for f in folders],
                    policy=Policy(after_failures=True),
                    display=Display(echo=False, title=f"choose the learning rate of {arch}"))

    def seed_steps(self, arch: str) -> List[Step]:
        """At the rate the choice chose: the first seed's model translated, the other seeds
        trained and translated.  They follow the rate file, so that they run after the choice
        and again if it changes; none when no rate of the grid finished."""
        lr, p = self.choice(arch).get("chosen"), self.protocol
        if lr is None:
            return []
        follows = [self.rate_file(arch)]
        steps = translate_steps(self.run, self.folder(arch, lr, p.seeds[0]), follows)
        for seed in p.seeds[1:]:
            folder = self.folder(arch, lr, seed)
            steps += [train_step(self.run, self.training(arch, lr, seed), follows),
                      *translate_steps(self.run, folder, follows)]
        return steps

    def graph(self, data_steps: List[Step]) -> Graph:
        prepare = Job("prepare", data_steps, kind="prepare")
        jobs = [prepare]
        schemes = []
        for arch in self.run.systems:
            grid = [Job(f"{arch}-lr{lr}", [self.grid_step(arch, lr)]) for lr in self.protocol.grid_of(arch)]
            # on SLURM this job starts when every rate has ended, however: the choice takes those that finished
            scheme = Job(arch, [self.choice_step(arch)], waits_for=[prepare, *grid], after_any=True,
                         later=Later(lambda arch=arch: self.seed_steps(arch),
                                     f"{arch}: the other seeds and the translations at its chosen rate"))
            jobs += [*grid, scheme]
            schemes.append(scheme)
        jobs.append(Job("boards", [self.tuning_step()], waits_for=schemes, kind="report", after_any=True,
                        later=Later(self.board_steps, "the boards")))
        # a folder prepared beforehand is locked, and written, only for what the run adds to it
        roots = [self.run.out] + ([self.run.data] if self.run.data_dir and data_steps else [])
        return Graph(jobs, roots=roots, keep_going=True)

    def failures(self) -> Dict[str, str]:
        """Each scheme whose trainings or translations did not all finish, and why."""
        found = {}
        for arch in self.run.systems:
            choice = self.choice(arch)
            if choice.get("failure"):
                found[arch] = f"the choice of its learning rate failed: {choice['failure']}"[:300]
                continue
            if not choice.get("chosen"):
                found[arch] = "no learning rate of the grid finished: " + "; ".join(
                    f"{lr}: {point.get('failure')}" for lr, point in choice["grid"].items())
                continue
            why = unfinished([self.grid_step(arch, choice["chosen"]), *self.seed_steps(arch)])
            if why:
                found[arch] = why[:300]
        return found

    def tuning_step(self) -> Step:
        tuning = self.run.out / "leaderboard" / "tuning.json"
        choices = [self.choice_file(arch) for arch in self.run.systems]
        return Step("tuning", [tool("tuning"), "--out", Out(tuning), "--metric", "dev loss (dev pairs within the limit)",
                               *[f"{arch}={path}" for arch, path in zip(self.run.systems, choices)]],
                    home=tuning.parent, root=self.run.out, inputs=choices, policy=Policy(after_failures=True),
                    display=Display(echo=False, title="the learning-rate table"))

    def board_steps(self) -> List[Step]:
        run_, failures = self.run, self.failures()
        tuning = run_.out / "leaderboard" / "tuning.json"
        steps = []
        models = {arch: [self.folder(arch, self.choice(arch)["chosen"], seed) for seed in self.protocol.seeds]
                  for arch in run_.systems if arch not in failures}
        logs = {arch: [folder / "train.log" for folder in folders] for arch, folders in models.items()}
        for test_set in run_.profile.test_sets:
            named, read = system_options(models, test_set, run_.oracle)
            args = [*named, *[a for arch in models for a in ("--train-log", f"{arch}=" + ",".join(map(str, logs[arch])))],
                    *[a for arch, why in failures.items() for a in ("--failed", f"{arch}={why}")]]
            inputs = [tuning, *read, *(log for arch in models for log in logs[arch])]
            steps.append(board_step(run_, test_set, args, inputs, len(self.protocol.seeds), tuning))
        return steps


def board_step(run_: SystemsRun, test_set: str, systems: Sequence[str], inputs: Sequence[Path], n_seeds: int,
               tuning: Path) -> Step:
    testset = run_.data / "testsets" / test_set
    board = run_.out / "leaderboard" / test_set
    device = ", on GPUs (fp16)" if run_.gpus else ""
    src, tgt = run_.profile.langs
    command = [tool("board"), "--source", testset / f"seg.{src}", "--length-file",
               testset / "longer-side", "--ref", testset / f"raw.{tgt}", *systems, "--tuning", tuning,
               "--baseline", run_.archs[0], "--train-limit", run_.limit, "--edges", run_.edges(test_set),
               "--tokenize", run_.profile.tokenize, "--bootstrap", 1000, "--seed", run_.seed,
               # 95 BLEU within the limit means "learned" on the synthetic pair, and nothing
               # after --quick's few updates or on real sentences
               *(["--learned-threshold", "0"] if run_.profile is not TOY or run_.quick else []),
               "--title", f"Leaderboard, {run_.profile.name}, {test_set}: trained on pairs of up to {run_.limit} "
                          f"subword tokens, {n_seeds} seed{'s' if n_seeds > 1 else ''}{device}",
               "--out-dir", OutDir(board)]
    return Step("board", command, home=board, root=run_.out,
                inputs=[testset / f"seg.{src}", testset / "longer-side", testset / f"raw.{tgt}", *inputs],
                display=Display(echo=False, title=f"board {test_set}"))


def folder_limit(data: Path, given: Optional[int]) -> int:
    """The training limit of a prepared folder: --train-limit, which it must have been prepared
    at, or the one limit it was prepared at."""
    limits = sorted(int(match.group(1)) for path in (data / "data-bin").glob("len*")
                    if (match := re.fullmatch(r"len(\d+)", path.name)))
    if given is None and len(limits) == 1:
        return limits[0]
    if given is not None and given in limits:
        return given
    prepared = f"it was prepared at {', '.join(map(str, limits))}" if limits else "it has no data-bin/lenN"
    wanted = f"--train-limit {given}" if given is not None else "a --train-limit"
    raise StepError(f"--data {data}: {wanted} it was prepared at is needed ({prepared}; scripts/prepare-corpus.sh "
                    "--train-limit N prepares one)")


def folder_concat_steps(run_: SystemsRun) -> List[Step]:
    """The concatenation augmentation of a prepared folder's lenN, with lenN's dev set, as
    prepare-*.sh --concat-augment --seed SEED makes it; none without concat systems, or where
    the folder was prepared with it (its own share and seed are kept)."""
    if not run_.concat or (run_.data / MANIFEST_DIR / f"concat.len{run_.limit}.json").is_file():
        return []
    prep = Prepared.read(run_.data)
    within = run_.data / f"len{run_.limit}" / "valid"  # --dev-within-limit's dev set, where it was prepared so
    valid = within if Path(f"{within}.{prep.src}").is_file() else run_.data / "seg" / "valid"
    return concat_steps(preparation_of(prep, run_.threads, concat=Concat(seed=run_.seed)), run_.limit, valid)


def leaderboard_main(argv: Sequence[str]) -> int:
    parser = demo_parser("leaderboard.sh")
    parser.add_argument("--data", default="synthetic")
    parser.add_argument("--from", dest="source", type=Path)
    parser.add_argument("--download", action="store_true")
    parser.add_argument("--seeds", type=positive_int, default=3)
    parser.add_argument("--lr-grid", type=learning_rates)
    parser.add_argument("--scheme-lr-grid", type=scheme_learning_rates, action="append", default=[])
    parser.add_argument("--validate-every", type=positive_int, default=200)
    parser.add_argument("--patience", type=positive_int, default=5)
    args = parser.parse_args(argv)
    environment = RecipeEnvironment.read()
    smoke = args.data == "tatoeba" and environment.smoke
    tatoeba = args.data == "tatoeba"
    data_dir = None if args.data in ("synthetic", "tatoeba") else absolute(Path(args.data))
    # defaults that follow --data, set once here whatever form the options took (--out-dir=DIR)
    if data_dir is not None:
        args.train_limit = folder_limit(data_dir, args.train_limit)
    if args.train_limit is None:
        args.train_limit = TATOEBA_LIMIT if tatoeba else 50
    if args.out_dir is None:
        name = "leaderboard-tatoeba" if tatoeba else f"leaderboard-{data_dir.name}" if data_dir else "demo"
        args.out_dir = REPO / "runs" / ("smoke" if smoke else "") / name
    if args.updates is None:
        args.updates = 16 if smoke else 6000
    if not tatoeba and (args.source or args.download):
        raise StepError("--from and --download are for --data tatoeba")
    archs = args.systems or all_archs()
    if not args.run_job:
        check_archs("--systems", archs)
        if args.concat_systems:
            check_archs("--concat-systems", args.concat_systems)
        out = absolute_out(args)
        if data_dir is None:
            refuse_unless_ours(out / "data", "leaderboard.sh")
        refuse_unless_ours(out / "leaderboard", "leaderboard.sh")
    if data_dir is not None:
        profile = folder_profile(data_dir, folder_concat_steps)
    elif tatoeba:
        profile = tatoeba_profile(args, environment, ["--concat-augment"] if args.concat_systems else [])
    else:
        profile = TOY
    run_ = systems_run(args, archs, profile)
    run_.data_dir = data_dir
    grid = args.lr_grid or (["3e-3"] if args.quick else list(profile.lr_grid))
    # --quick caps the updates (systems_run), the protocol's cap with them
    grids = dict(args.scheme_lr_grid)
    if len(grids) != len(args.scheme_lr_grid) or set(grids) - set(run_.systems):
        raise StepError("--scheme-lr-grid: once per scheme, and only for schemes of --systems or --concat-systems "
                        f"(got {', '.join(arch for arch, _ in args.scheme_lr_grid)})")
    protocol = Protocol(grid=grid, seeds=[run_.seed + k for k in range(args.seeds)], validate_every=args.validate_every,
                        patience=args.patience, cap=run_.updates, grids=grids)
    board = Leaderboard(run_, protocol)
    launch = Launch.from_args("leaderboard", argv, args, threads=run_.threads, gpus=run_.gpus,
                              console=ProgressConsole(), environment=RECIPE_ENVIRONMENT)
    began = time.monotonic()
    outcome = run(board.graph(profile.steps(run_)), launch)
    if launch.finishes_here:
        if launch.launcher == "local":
            launch.console.log(f"done in {time.monotonic() - began:.0f} s")
        print_outputs(run_.out / "leaderboard", profile.test_sets, "board.md",
                      "board.md, board.json, bleu.png, length_ratio.png", outcome)
    return 0
