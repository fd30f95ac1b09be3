"""The demo and the leaderboard: the study in miniature on the synthetic pair, one folder
(``--out-dir``) holding the data (OUT/data), each system (OUT/ARCH, OUT/ARCH-seedS for the
leaderboard's other seeds) and the reports (OUT/report/SET) or boards (OUT/leaderboard/SET).

Everything is recorded relative to OUT, so a moved or copied OUT is still the same run.
The demo deletes nothing it did not make: a folder of OUT in its way without step manifests
(or an older version's demo.settings) is refused before any work, and a step that is redone
replaces only its own files.
"""
import argparse
import dataclasses
import json
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import legacy
from .options import (DEFAULT_THREADS, Parser, absolute, command_line, folder, log, name_list, non_negative_int,
                  positive_int)
from ..engine.slurm import Job, Launch, add_launcher_options, failures_of
from . import PY, tool
from .data import preparation_steps, testsets_graph
from ..engine.console import Console, ProgressConsole
from ..engine.core import MANIFEST_DIR, FolderLock, LocalExecutor, Out, Outcome, OutDir, Step, StepError, describe, merged, \
    plan
from .prepare import REPO, SMOKE_TATOEBA_PREPARE, prepared_view, smoke_slice, smoke_tatoeba_export, \
    tatoeba_checked_preparation, tatoeba_parser, toy_parser, toy_preparation
from .presets import SMOKE_MODEL, SMOKE_TRANSLATE, TATOEBA_LIMIT, TATOEBA_MODEL, TATOEBA_SETS, tatoeba_edges
from .training import Training, Translation, visible_gpus

DEMO_SYSTEMS = "transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos"
# No dropout: on the synthetic pair it only slowed learning (measured: with it, batches of 2,000
# tokens needed 3,000 updates for every system to reach 97 BLEU within the limit; without it and
# with batches of 1,000 tokens, 2,300 updates do, at 38% of the tokens; docs/reproducing.md)
DEMO_MODEL = ("--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64",
              "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
              "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--dropout", "0.0")


@dataclasses.dataclass
class Corpus:
    """What the demo's steps need to know of the language pair they train on: the synthetic
    pair (the default) or Tatoeba German-English (the leaderboard's --data tatoeba)."""

    name: str
    langs: Tuple[str, str]
    test_sets: Tuple[str, ...]
    model: Tuple[str, ...]  # fairseq-train's model options
    batch_tokens: int
    warmup: int
    tokenize: str  # BLEU's tokenizer: none for the synthetic pair's tokens, 13a for text
    steps: Callable[["DemoRun"], List[Step]]  # the preparation and the test sets, in OUT/data
    test_edges: Callable[[int], str]
    joined_edges: Callable[[int], str]
    translate: Tuple[str, ...] = ()  # translate.sh's options besides the defaults (beam 5)
    # the leaderboard's default learning rates: log-spaced, a factor of about 3 apart
    lr_grid: Tuple[str, ...] = ("3e-3", "1e-2", "3e-2")


@dataclasses.dataclass
class DemoRun:
    """The options demo.sh and leaderboard.sh share, and what follows from them."""

    archs: List[str]
    limit: int
    updates: int
    seed: int
    out: Path
    quick: bool
    threads: int
    gpus: int
    dry_run: bool
    corpus: Optional[Corpus] = None

    def __post_init__(self):
        self.corpus = self.corpus or TOY

    @property
    def data(self) -> Path:
        return self.out / "data"

    def data_args(self) -> List[str]:
        """prepare-toy.sh's options: sentence lengths in source words scale with the limit (50:
        training 12-40, test 12-50).  A target has about 1.4 words per source word and BPE
        splits few words, so training sentences straddle the limit and the test set's longer
        sides reach about twice it."""
        shortest = self.limit // 4
        train_pairs, test_pairs = (4000, 60) if self.quick else (20000, 300)
        return ["--seed", str(self.seed), "--max-len", str(self.limit), "--train-pairs", str(train_pairs),
                "--train-words", f"{shortest} {self.limit * 4 // 5}", "--test-pairs", str(test_pairs),
                "--test-words", f"{shortest} {self.limit}"]

    def edges(self, test_set: str) -> str:
        """The reports' buckets, at multiples of the limit."""
        edges = self.corpus.test_edges if test_set == "test" else self.corpus.joined_edges
        return edges(self.limit)


def demo_parser(prog: str, systems_default: str, updates: int = 2300) -> Parser:
    parser = Parser(prog)
    parser.add_argument("--systems", type=name_list, default=systems_default.split(",") if systems_default else None)
    parser.add_argument("--train-limit", type=_limit, default=50)
    parser.add_argument("--updates", type=positive_int, default=updates)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--out-dir", type=folder, default=Path(__file__).resolve().parents[1] / "runs" / "demo")
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS)
    parser.add_argument("--gpus", type=_gpus, default=0)
    parser.add_argument("--dry-run", action="store_true")
    return parser


def _limit(text: str) -> int:
    if not text.isdigit() or int(text) < 16:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 16, got '{text}'")
    return int(text)


def _gpus(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected the number of GPUs to use (0 for CPU cores only), got '{text}'")
    return int(text)


def demo_run(args, archs: Sequence[str]) -> DemoRun:
    run = DemoRun(archs=list(archs), limit=args.train_limit, updates=min(args.updates, 200) if args.quick else args.updates,
                  seed=args.seed, out=absolute(args.out_dir), quick=args.quick, threads=args.threads, gpus=args.gpus,
                  dry_run=args.dry_run)
    return run


def check_archs(option: str, archs: Sequence[str]) -> None:
    """Every architecture must be one fairseq knows with this plugin loaded (asked before any
    work, so that a typo does not fail hours later)."""
    code = ("import logging, sys; logging.disable(logging.INFO); import fairseq_relpos\n"
            "from fairseq.models import ARCH_MODEL_REGISTRY as R\n"
            "unknown = [a for a in sys.argv[1:] if a not in R]\n"
            "ours = sorted(a for a, m in R.items() if m.__module__.startswith('fairseq_relpos'))\n"
            "print(','.join(unknown)); print(', '.join(ours))")
    proc = subprocess.run([PY, "-c", code, *archs], capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"could not load fairseq to check {option} ({proc.stderr.strip().splitlines()[-1:]})")
    unknown, ours = proc.stdout.splitlines()[:2]
    if unknown:
        raise StepError(f"{option}: unknown architecture {unknown.replace(',', ', ')} "
                        f"(fairseq-relpos has {ours}; fairseq's own, such as transformer, work too)")


def all_archs() -> List[str]:
    proc = subprocess.run([PY, "-c", "import logging; logging.disable(logging.INFO)\n"
                                     "from fairseq_relpos.models.relpos_transformer import ARCHITECTURES\n"
                                     "print('\\n'.join(ARCHITECTURES))"], capture_output=True, text=True, check=True)
    return proc.stdout.split()


def effective_labels(archs: Sequence[str], train_args: Sequence[str]) -> Dict[str, str]:
    """Each architecture's name as what it trains with ``train_args``: ``transformer_abs``,
    or ``transformer_abs[encoder alibi]`` when an option such as --encoder-pos changes its
    position schemes (fairseq_relpos.effective_label), so that no table calls an ALiBi encoder
    transformer_abs."""
    code = ("import json, logging, sys; logging.disable(logging.WARNING)\n"
            "from fairseq_relpos import effective_label\n"
            "archs, args = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
            "print(json.dumps({a: effective_label(a, args) for a in archs}))")
    proc = subprocess.run([PY, "-c", code, json.dumps(list(archs)), json.dumps(list(train_args))],
                          capture_output=True, text=True)
    if proc.returncode:
        raise StepError(f"the position options of TRAIN_EXTRA_ARGS: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout)


def check_gpus(gpus: int) -> None:
    if gpus:
        visible = visible_gpus()
        if gpus > visible:
            raise StepError(f"--gpus {gpus} but torch sees {visible} GPU(s)")


def refuse_unless_ours(folder: Path, old_marker: str) -> None:
    """A folder in the way that the demo did not make (no step manifests in it or in its
    subfolders) stops the run before any work."""
    ours = any(True for pattern in (MANIFEST_DIR, f"*/{MANIFEST_DIR}", f"*/*/{MANIFEST_DIR}") for _ in folder.glob(pattern))
    if folder.is_dir() and any(folder.iterdir()) and not ours and not (folder / old_marker).exists():
        raise StepError(f"{folder} exists and was not made by demo.sh or leaderboard.sh (no step manifests in it); "
                        "choose another --out-dir or move it away")


# ----------------------------------------------------------------------------------------
# the steps
# ----------------------------------------------------------------------------------------
def toy_steps(run: DemoRun) -> List[Step]:
    # one worker per step: the data is too small for parallel tools, and the steps themselves
    # run side by side
    args = toy_parser().parse_args([*run.data_args(), "--threads", "1", "--dev-within-limit"])
    p = toy_preparation(args, run.data, on_change="redo")
    prep = prepared_view(p)
    return merged(preparation_steps(p),
                  testsets_graph(prep, run.corpus.test_sets, lambda name: p.fetcher.testset(p, name), run.threads))


def data_steps(run: DemoRun) -> List[Step]:
    return run.corpus.steps(run)


# up to 2x in halves for the test set, up to 3x for concat_seq, whose joined pairs are twice as long;
# rates from the demo's 3e-3 up: on the first CPU board (grid 1e-3 to 1e-2, three schemes) 1e-3
# was the worst rate of every scheme and the costliest (6,000 updates), 1e-2 the best of all three
TOY = Corpus(name="the synthetic pair", langs=("src", "tgt"), test_sets=("test", "concat_seq"), model=DEMO_MODEL,
             batch_tokens=1000, warmup=100, tokenize="none", steps=toy_steps,
             test_edges=lambda l: f"{l},{l * 3 // 2},{l * 2}", joined_edges=lambda l: f"{l},{l * 2},{l * 3}")


def demo_training(run: DemoRun, arch: str, train_seed: int, folder: Path, lr: str = "3e-3",
                  stopping: Sequence[str] = (), patience: int = -1) -> Training:
    """ARCH trained into FOLDER: 2+2 layers of width 64, batches of 1,000 tokens, Adam with
    ``lr`` on an inverse-sqrt schedule, on one CPU core or in fp16 on a GPU; ``stopping``
    (fairseq-train options) and ``patience`` (dev evaluations without improvement) end it, by
    default after --updates updates."""
    corpus = run.corpus
    return Training(data=run.data / "data-bin" / f"len{run.limit}", arch=arch, save=folder,
                    batch_tokens=corpus.batch_tokens, lr=lr, scheduler="inverse_sqrt", patience=str(patience),
                    max_epochs=1000, seed=str(train_seed), n_shards=1,
                    extra=[*corpus.model, "--warmup-updates", str(corpus.warmup),
                           *(stopping or ("--max-update", str(run.updates))), "--log-interval", "100",
                           "--num-workers", "0"])


def train_step(run: DemoRun, training: Training) -> Step:
    """A GPU model is never taken for a CPU one."""
    on_gpu = ["--device", "gpu"] if run.gpus else []
    return training.step(1 if run.gpus else 0, root=run.out, label=training.save.name, on_change="redo",
                         identity_extra=on_gpu)


def translate_steps(run: DemoRun, folder: Path) -> List[Step]:
    """Both test sets translated with FOLDER's best checkpoint (beam 5)."""
    steps = []
    for test_set in run.corpus.test_sets:
        translation = Translation(checkpoint=folder / "checkpoint_best.pt", testset=run.data / "testsets" / test_set,
                                  out=folder / test_set, cpu=not run.gpus, extra=list(run.corpus.translate))
        steps.append(translation.step(run.corpus.langs, root=run.out, label=folder.name, gpus=1 if run.gpus else 0))
    return steps


def system_steps(run: DemoRun, arch: str, folder: Path) -> List[Step]:
    """The demo's system: --updates updates at lr 3e-3, then both test sets translated."""
    train = train_step(run, demo_training(run, arch, run.seed, folder))
    old_settings = " ".join([*run.data_args(), "--updates", str(run.updates)] + (["--device", "gpu"] if run.gpus else []))
    recognised = train.legacy_done
    train.legacy_done = lambda: recognised() and legacy.demo_settings(folder, old_settings)
    return [train, *translate_steps(run, folder)]


def report_step(run: DemoRun, test_set: str, systems: Dict[str, Path]) -> Step:
    testset = run.data / "testsets" / test_set
    report = run.out / "report" / test_set
    hyps = [systems[arch] / test_set / "hyp.txt" for arch in systems]
    command = [PY, "-m", "relpos_analysis.report", "--source", testset / "seg.src", "--length-file", testset / "longer-side",
               "--ref", testset / "raw.tgt", *[a for arch, hyp in zip(systems, hyps) for a in ("--system", f"{arch}={hyp}")],
               "--baseline", next(iter(systems)), "--tokenize", "none", "--metrics", "bleu,ter",
               "--edges", run.edges(test_set), "--train-limit", run.limit, "--bootstrap", 200, "--seed", run.seed,
               "--title", f"Demo, {test_set}: trained on pairs of up to {run.limit} subword tokens (length: longer side)",
               "--out-dir", OutDir(report)]
    return Step("report", command, home=report, root=run.out, echo=False, title=f"report {test_set}",
                inputs=[testset / "seg.src", testset / "longer-side", testset / "raw.tgt", *hyps])


# ----------------------------------------------------------------------------------------
# running it in phases: the data, the systems, the reports
# ----------------------------------------------------------------------------------------
class Phases:
    """Runs groups of steps one after another under one lock, saying how long each took."""

    def __init__(self, run: DemoRun, what: str, console: Optional[Console] = None):
        self.run = run
        self.console = console or Console()
        self.lock = FolderLock([run.out], what)
        self.start = time.monotonic()

    def __enter__(self):
        if not self.run.dry_run:
            self.lock.__enter__()
        return self

    def __exit__(self, *exc):
        self.lock.__exit__(*exc)

    def __call__(self, title: str, steps: Sequence[Step], keep_going: bool = False) -> Optional[Outcome]:
        if self.run.dry_run:
            print(f"# {title}")
            print(describe(plan(steps)))
            return None
        began = time.monotonic()
        executor = LocalExecutor(threads=self.run.threads, gpus=self.run.gpus, console=self.console)
        outcome = executor.run(steps, keep_going=keep_going)
        self.console.log(f"{title} took {time.monotonic() - began:.0f} s")
        return outcome

    def done(self) -> None:
        if not self.run.dry_run:
            self.console.log(f"done in {time.monotonic() - self.start:.0f} s")


def demo_main(argv: Sequence[str]) -> int:
    args = demo_parser("demo.sh", DEMO_SYSTEMS).parse_args(argv)
    run = demo_run(args, args.systems)
    check_archs("--systems", run.archs)
    check_gpus(run.gpus)
    refuse_unless_ours(run.data, "demo.settings")
    for arch in run.archs:
        refuse_unless_ours(run.out / arch, "demo.settings")
    for test_set in run.corpus.test_sets:
        refuse_unless_ours(run.out / "report" / test_set, "demo.command")
    systems = {arch: run.out / arch for arch in run.archs}
    with Phases(run, command_line("demo.sh", argv), ProgressConsole()) as phase:
        phase("preparing the data and the test sets", data_steps(run))
        phase("training and translating", [s for arch in run.archs for s in system_steps(run, arch, systems[arch])])
        phase("the reports", [report_step(run, test_set, systems) for test_set in run.corpus.test_sets])
        phase.done()
    if not run.dry_run:
        for test_set in run.corpus.test_sets:
            print((run.out / "report" / test_set / "report.md").read_text(encoding="utf-8"))
        for test_set in run.corpus.test_sets:
            print(f"report: {run.out / 'report' / test_set} (report.md, report.json, buckets.png, lengths.png)")
    return 0


# ----------------------------------------------------------------------------------------
# the leaderboard: each scheme's learning rate chosen on dev loss, then several seeds
# ----------------------------------------------------------------------------------------
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

    def stopping(self) -> List[str]:
        every = str(self.validate_every)
        return ["--max-update", str(self.cap), "--validate-interval-updates", every, "--save-interval-updates", every,
                "--keep-interval-updates", "1", "--validate-interval", "1000000", "--save-interval", "1000000"]


def _learning_rates(text: str) -> List[str]:
    rates = [r.strip() for r in text.split(",")]
    try:
        if not rates or any(float(r) <= 0 or not math.isfinite(float(r)) for r in rates):
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive learning rates separated by commas, got '{text}'") from None
    if len(set(rates)) != len(rates):
        raise argparse.ArgumentTypeError(f"names a learning rate twice: '{text}'")
    return rates


class Leaderboard:
    """The leaderboard's steps, folders and jobs for one command line."""

    def __init__(self, run: DemoRun, protocol: Protocol):
        self.run = run
        self.protocol = protocol

    def folder(self, arch: str, lr: str, seed: int) -> Path:
        name = f"{arch}-lr{lr}" + ("" if seed == self.protocol.seeds[0] else f"-seed{seed}")
        return self.run.out / "leaderboard" / "models" / name

    def choice_file(self, arch: str) -> Path:
        return self.run.out / "leaderboard" / "choice" / f"{arch}.json"

    def rate_file(self, arch: str) -> Path:
        return self.choice_file(arch).with_suffix(".lr")

    def chosen(self, arch: str) -> str:
        """The rate the choice step chose (before it ran: the grid's first, a placeholder that
        a job rebuilding the graph after the choice replaces)."""
        try:
            chosen = json.loads(self.choice_file(arch).read_text(encoding="utf-8"))["chosen"]
        except (FileNotFoundError, ValueError, KeyError):
            chosen = None
        return chosen or self.protocol.grid[0]

    def grid_steps(self, arch: str) -> List[Step]:
        p = self.protocol
        return [train_step(self.run, self.training(arch, lr, p.seeds[0])) for lr in p.grid]

    def training(self, arch: str, lr: str, seed: int) -> Training:
        p = self.protocol
        return demo_training(self.run, arch, seed, self.folder(arch, lr, seed), lr, p.stopping(), p.patience)

    def choice_step(self, arch: str) -> Step:
        folders = [self.folder(arch, lr, self.protocol.seeds[0]) for lr in self.protocol.grid]
        out = self.choice_file(arch)
        return Step(f"choose-{arch}", [tool("choose-lr"), "--out", Out(out),
                                       "--out-rate", Out(self.rate_file(arch)),
                                       *[f"{lr}={folder}" for lr, folder in zip(self.protocol.grid, folders)]],
                    home=out.parent, root=self.run.out, inputs=[f / "train.log" for f in folders],
                    after_failures=True, echo=False, title=f"choose the learning rate of {arch}")

    def seed_steps(self, arch: str) -> List[Step]:
        """The chosen rate's first seed translated, the other seeds trained and translated."""
        p, lr = self.protocol, self.chosen(arch)
        first = self.folder(arch, lr, p.seeds[0])
        steps = translate_steps(self.run, first)
        for seed in p.seeds[1:]:
            folder = self.folder(arch, lr, seed)
            steps += [train_step(self.run, self.training(arch, lr, seed)), *translate_steps(self.run, folder)]
        for step in steps:  # they follow the chosen rate (a job rebuilding the graph reads it)
            step.inputs = [*step.inputs, self.rate_file(arch)]
        return steps

    def unit_folders(self, arch: str) -> List[Path]:
        lr = self.chosen(arch)
        return [self.folder(arch, lr, seed) for seed in self.protocol.seeds]

    def jobs(self, in_job: bool) -> List[Job]:
        run = self.run
        jobs = [Job("prepare", data_steps(run), kind="prepare")]
        for arch in run.archs:
            jobs += [Job(f"{arch}-lr{lr}", [step]) for lr, step in zip(self.protocol.grid, self.grid_steps(arch))]
            jobs.append(Job(arch, [self.choice_step(arch), *self.seed_steps(arch)], after_any=True))
        jobs.append(Job("boards", self.board_steps(read_failures=in_job), kind="report", after_any=True))
        return jobs

    def failures(self) -> Dict[str, str]:
        """Each scheme whose trainings or translations did not all finish, and why."""
        found = {}
        for arch in self.run.archs:
            choice = self._choice(arch)
            if choice is not None and not choice.get("chosen"):
                found[arch] = "no learning rate of the grid finished: " + "; ".join(
                    f"{lr}: {point.get('failure')}" for lr, point in choice["grid"].items())
                continue
            failed = failures_of([Job(arch, self.unit_steps(arch))])
            if failed:
                found[arch] = failed[arch][:300]
        return found

    def unit_steps(self, arch: str) -> List[Step]:
        """Every training and translation behind the scheme's board entry: each seed at the
        chosen rate."""
        lr, steps = self.chosen(arch), []
        for seed in self.protocol.seeds:
            steps += [train_step(self.run, self.training(arch, lr, seed)),
                      *translate_steps(self.run, self.folder(arch, lr, seed))]
        return steps

    def _choice(self, arch: str) -> Optional[dict]:
        try:
            return json.loads(self.choice_file(arch).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def board_steps(self, read_failures: bool) -> List[Step]:
        run = self.run
        failures = self.failures() if read_failures else {}
        for arch, why in failures.items():
            log(f"{arch}: {why}; the other systems went on")
        tuning = run.out / "leaderboard" / "tuning.json"
        choices = [self.choice_file(arch) for arch in run.archs]
        steps = [Step("tuning", [tool("tuning"), "--out", Out(tuning),
                                 "--metric", "dev loss (dev pairs within the limit)",
                                 *[f"{arch}={path}" for arch, path in zip(run.archs, choices)]],
                      home=tuning.parent, root=run.out, inputs=choices, after_failures=True, echo=False,
                      title="the learning-rate table")]
        for test_set in run.corpus.test_sets:
            args, inputs = [], [tuning]
            for arch in run.archs:
                if arch in failures:
                    args += ["--failed", f"{arch}={failures[arch]}"]
                    continue
                folders = self.unit_folders(arch)
                hyps = [f / test_set / "hyp.txt" for f in folders]
                logs = [f / "train.log" for f in folders]
                args += ["--system", f"{arch}=" + ",".join(map(str, hyps)),
                         "--train-log", f"{arch}=" + ",".join(map(str, logs))]
                inputs += hyps + logs
            steps.append(board_step(run, test_set, args, inputs, len(self.protocol.seeds), tuning))
        return steps


def tatoeba_corpus(args, smoke: bool) -> Corpus:
    """Tatoeba German-English (prepare-tatoeba.sh's split, its dev pairs within the limit) in
    OUT/data, with the Tatoeba study's model and buckets; SMOKE=1: every 85th pair of
    SMOKE_DATA and the tiny SMOKE model."""
    out = absolute(args.out_dir)
    source = args.source
    prepare = ["--max-len", str(args.train_limit), "--threads", str(args.threads), "--out-dir", str(out / "data")]
    model, batch, translate = TATOEBA_MODEL, 2048, ()
    if smoke:
        data = smoke_tatoeba_export(args)
        source = out / "data" / "raw" / "slice.txt"  # cut when the graph is built, after the folder checks
        prepare += SMOKE_TATOEBA_PREPARE
        model, batch, translate = SMOKE_MODEL, 1200, SMOKE_TRANSLATE
    prepare += ["--from", str(source)] if source else (["--download"] if args.download else [])
    if args.dry_run:
        prepare.append("--dry-run")
    prep_args = tatoeba_parser().parse_args(prepare)

    def steps(run: DemoRun) -> List[Step]:
        if smoke:
            smoke_slice(data, source)
        p = tatoeba_checked_preparation(prep_args, on_change="redo", dev_within_limit=True)
        return merged(preparation_steps(p), testsets_graph(prepared_view(p), TATOEBA_SETS,
                                                          lambda name: p.fetcher.testset(p, name), run.threads))

    return Corpus(name="Tatoeba De-En", langs=("de", "en"), test_sets=TATOEBA_SETS, model=tuple(model),
                  batch_tokens=batch, warmup=400, tokenize="13a", steps=steps, translate=tuple(translate),
                  lr_grid=("3e-4", "1e-3", "3e-3"),  # around tatoeba.sh's 1e-3
                  test_edges=lambda l: tatoeba_edges("test", l), joined_edges=lambda l: tatoeba_edges("concat_seq", l))


def leaderboard_main(argv: Sequence[str]) -> int:
    parser = demo_parser("leaderboard.sh", "", updates=6000)
    parser.add_argument("--data", choices=("synthetic", "tatoeba"), default="synthetic")
    parser.add_argument("--from", dest="source", type=Path)
    parser.add_argument("--download", action="store_true")
    parser.add_argument("--seeds", type=positive_int, default=3)
    parser.add_argument("--lr-grid", type=_learning_rates)
    parser.add_argument("--validate-every", type=positive_int, default=200)
    parser.add_argument("--patience", type=positive_int, default=5)
    add_launcher_options(parser)
    args = parser.parse_args(argv)
    corpus = TOY
    if args.data == "tatoeba":
        smoke = os.environ.get("SMOKE", "0") == "1"
        if "--train-limit" not in argv:
            args.train_limit = TATOEBA_LIMIT
        if "--out-dir" not in argv:
            args.out_dir = REPO / "runs" / ("smoke" if smoke else "") / "leaderboard-tatoeba"
        if smoke and "--updates" not in argv:
            args.updates = 16
        corpus = tatoeba_corpus(args, smoke)
    elif args.source or args.download:
        raise StepError("--from and --download are for --data tatoeba")
    archs = args.systems or all_archs()
    run = demo_run(args, archs)
    run.corpus = corpus
    if not args.run_job:
        check_archs("--systems", run.archs)
        if args.launcher == "local":
            check_gpus(run.gpus)
    if args.run_job:
        run.gpus = visible_gpus()
    elif args.launcher == "slurm":
        run.gpus = args.slurm_gpus_per_job
    grid = args.lr_grid or (["3e-3"] if args.quick else list(corpus.lr_grid))
    protocol = Protocol(grid=grid, seeds=[run.seed + k for k in range(args.seeds)], validate_every=args.validate_every,
                        patience=args.patience, cap=args.updates)
    board = Leaderboard(run, protocol)
    refuse_unless_ours(run.data, "demo.settings")
    refuse_unless_ours(run.out / "leaderboard", "demo.command")
    what = command_line("leaderboard.sh", argv)
    if args.launcher == "slurm" or args.run_job:
        Launch("leaderboard", argv, args, roots=[run.out], threads=run.threads, gpus=run.gpus).run(
            board.jobs(in_job=bool(args.run_job)))
        if not (args.wait and not args.run_job and not args.dry_run):
            return 0
    else:
        with Phases(run, what, ProgressConsole()) as phase:
            phase("preparing the data and the test sets", data_steps(run))
            phase(f"training {len(run.archs)} schemes at {len(grid)} learning rate(s) until the dev loss stops "
                  "improving", [s for arch in run.archs for s in board.grid_steps(arch)], keep_going=True)
            phase("choosing each scheme's learning rate", [board.choice_step(arch) for arch in run.archs],
                  keep_going=True)
            phase("training the other seeds and translating",
                  [s for arch in run.archs for s in board.seed_steps(arch)], keep_going=True)
            phase("the boards", board.board_steps(read_failures=not run.dry_run))
            phase.done()
    if not run.dry_run:
        for test_set in run.corpus.test_sets:
            print((run.out / "leaderboard" / test_set / "board.md").read_text(encoding="utf-8"))
        for test_set in run.corpus.test_sets:
            print(f"board: {run.out / 'leaderboard' / test_set} (board.md, board.json, bleu.png, length_ratio.png)")
    return 0


def board_step(run: DemoRun, test_set: str, systems: Sequence[str], inputs: Sequence[Path], n_seeds: int,
               tuning: Path) -> Step:
    testset = run.data / "testsets" / test_set
    board = run.out / "leaderboard" / test_set
    device = ", on GPUs (fp16)" if run.gpus else ""
    src, tgt = run.corpus.langs
    command = [PY, "-m", "relpos_analysis.leaderboard", "--source", testset / f"seg.{src}", "--length-file",
               testset / "longer-side", "--ref", testset / f"raw.{tgt}", *systems, "--tuning", tuning,
               "--baseline", run.archs[0], "--train-limit", run.limit, "--edges", run.edges(test_set),
               "--tokenize", run.corpus.tokenize, "--bootstrap", 1000, "--seed", run.seed,
               # 95 BLEU within the limit means "learned" on the synthetic pair, and nothing
               # after --quick's few updates or on real sentences
               *(["--learned-threshold", "0"] if run.corpus is not TOY or run.quick else []),
               "--title", f"Leaderboard, {run.corpus.name}, {test_set}: trained on pairs of up to {run.limit} subword "
                          f"tokens, {n_seeds} seed{'s' if n_seeds > 1 else ''}{device}",
               "--out-dir", OutDir(board)]
    return Step("board", command, home=board, root=run.out, echo=False, title=f"board {test_set}",
                inputs=[testset / f"seg.{src}", testset / "longer-side", testset / f"raw.{tgt}", *inputs])
