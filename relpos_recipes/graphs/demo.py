"""The demo: the study in miniature on the synthetic pair, one folder (``--out-dir``) holding
the data (OUT/data), each system (OUT/ARCH) and the reports (OUT/report/SET).

Everything is recorded relative to OUT, so a moved or copied OUT is still the same run.
The demo deletes nothing it did not make: a folder of OUT in its way without step manifests
is refused before any work, and a step that is redone replaces only its own files.
"""
import argparse
import dataclasses
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..engine import Display, Graph, Job, Launch, OutDir, ProgressConsole, Step, StepError, add_launcher_options, run
from ..engine.local import Outcome
from ..engine.step import MANIFEST_DIR, REPO
from . import tool
from .archs import check_archs
from .data import JOINED_SETS, preparation_and_test_sets
from .options import DEFAULT_THREADS, RECIPE_ENVIRONMENT, Parser, absolute, folder, name_list, non_negative_int, positive_int
from .prepare import toy_parser, toy_preparation
from .reports import oracle_folder, system_options
from .training import Training, Translation, visible_gpus

DEMO_SYSTEMS = "transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos"
# No dropout: on the synthetic pair it only slowed learning (measured: with it, batches of 2,000
# tokens needed 3,000 updates for every system to reach 97 BLEU within the limit; without it and
# with batches of 1,000 tokens, 2,300 updates do, at 38% of the tokens; docs/reproducing.md)
DEMO_MODEL = ("--encoder-layers", "2", "--decoder-layers", "2", "--encoder-embed-dim", "64",
              "--decoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--decoder-ffn-embed-dim", "128",
              "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--dropout", "0.0")


CONCAT = "+concat"  # a system trained on the concatenation-augmented data: ARCH+concat


def system_arch(system: str) -> str:
    """The architecture of a system (ARCH, or ARCH+concat)."""
    return system.removesuffix(CONCAT)


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
    lr: str = "3e-3"  # a system's learning rate where none is chosen (the bands recipe)


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
    corpus: Optional[Corpus] = None
    oracle: bool = False  # each model also decodes with its references' lengths
    data_dir: Optional[Path] = None  # a folder prepared beforehand (--data DIR); None: OUT/data
    # architectures also trained on the concatenation-augmented data, as systems ARCH+concat
    concat: List[str] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self.corpus = self.corpus or TOY

    @property
    def systems(self) -> List[str]:
        """Every system's name: the architectures, then each of ``concat`` as ARCH+concat."""
        return [*self.archs, *(arch + CONCAT for arch in self.concat)]

    def training_data(self, system: str) -> str:
        """The data-bin a system trains on: lenN, or lenN-concat for ARCH+concat."""
        return f"len{self.limit}-concat" if system.endswith(CONCAT) else f"len{self.limit}"

    @property
    def data(self) -> Path:
        return self.data_dir or self.out / "data"

    def data_bin(self, name: str) -> Path:
        return self.data / "data-bin" / name

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
        edges = self.corpus.joined_edges if test_set in JOINED_SETS else self.corpus.test_edges
        return edges(self.limit)


def demo_parser(prog: str) -> Parser:
    """The options demo.sh and leaderboard.sh share; a default that depends on others (the
    leaderboard's on --data) is None here and set once, after parsing."""
    parser = Parser(prog)
    parser.add_argument("--systems", type=name_list)
    parser.add_argument("--train-limit", type=_limit)
    parser.add_argument("--oracle-length", action="store_true")
    parser.add_argument("--concat-systems", type=name_list, default=[])
    add_run_options(parser)
    return parser


def add_run_options(parser: Parser) -> None:
    """How a recipe of systems trained alike runs (the demo, the leaderboard, the bands
    recipe): their budget, seed, folder, cores or GPUs, and where the graph runs."""
    parser.add_argument("--updates", type=positive_int)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--out-dir", type=folder)
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS)
    parser.add_argument("--gpus", type=_gpus, default=0)
    parser.add_argument("--dry-run", action="store_true")
    add_launcher_options(parser)


def _limit(text: str) -> int:
    if not text.isdigit() or int(text) < 16:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 16, got '{text}'")
    return int(text)


def _gpus(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected the number of GPUs to use (0 for CPU cores only), got '{text}'")
    return int(text)


def demo_run(args, archs: Sequence[str], corpus: Optional[Corpus] = None) -> DemoRun:
    """The run the options describe; --quick caps the updates at 200.  Where it runs decides
    its GPUs: --gpus here, --slurm-gpus-per-job for its SLURM jobs, what a job sees in one."""
    gpus = visible_gpus() if args.run_job else args.slurm_gpus_per_job if args.launcher == "slurm" else args.gpus
    if args.launcher == "local" and not args.run_job:
        check_gpus(gpus)
    return DemoRun(archs=list(archs), limit=args.train_limit, updates=min(args.updates, 200) if args.quick else args.updates,
                   seed=args.seed, out=absolute(args.out_dir), quick=args.quick, threads=args.threads, gpus=gpus,
                   corpus=corpus, oracle=args.oracle_length, concat=args.concat_systems)


def check_gpus(gpus: int) -> None:
    if gpus:
        visible = visible_gpus()
        if gpus > visible:
            raise StepError(f"--gpus {gpus} but torch sees {visible} GPU(s)")


def refuse_unless_ours(folder: Path) -> None:
    """A folder in the way that the recipe did not make (no step manifests in it or in its
    subfolders) stops the run before any work."""
    ours = any(True for pattern in (MANIFEST_DIR, f"*/{MANIFEST_DIR}", f"*/*/{MANIFEST_DIR}") for _ in folder.glob(pattern))
    if folder.is_dir() and any(folder.iterdir()) and not ours:
        raise StepError(f"{folder} exists and was not made by demo.sh or leaderboard.sh (no step manifests in it); "
                        "choose another --out-dir or move it away")


# ----------------------------------------------------------------------------------------
# the steps
# ----------------------------------------------------------------------------------------
def toy_steps(run: DemoRun) -> List[Step]:
    # one worker per step: the data is too small for parallel tools, and the steps themselves
    # run side by side
    args = toy_parser().parse_args([*run.data_args(), "--threads", "1", "--dev-within-limit",
                                    *(["--concat-augment"] if run.concat else [])])
    p = toy_preparation(args, run.data, on_change="redo")
    return preparation_and_test_sets(p, run.corpus.test_sets, run.threads)


# up to 2x in halves for the test set, up to 3x for concat_seq, whose joined pairs are twice as long;
# rates from the demo's 3e-3 up: on the first CPU board (grid 1e-3 to 1e-2, three schemes) 1e-3
# was the worst rate of every scheme and the costliest (6,000 updates), 1e-2 the best of all three
TOY = Corpus(name="the synthetic pair", langs=("src", "tgt"), test_sets=("test", "concat_seq"), model=DEMO_MODEL,
             batch_tokens=1000, warmup=100, tokenize="none", steps=toy_steps,
             test_edges=lambda l: f"{l},{l * 3 // 2},{l * 2}", joined_edges=lambda l: f"{l},{l * 2},{l * 3}")


def demo_training(run: DemoRun, system: str, train_seed: int, folder: Path, lr: str = "3e-3",
                  stopping: Sequence[str] = (), patience: int = -1, data_bin: str = "") -> Training:
    """SYSTEM (an architecture, or ARCH+concat) trained into FOLDER on data-bin/DATA_BIN
    (default: the system's, lenN or lenN-concat): the corpus's model
    (the synthetic pair's: 2+2 layers of width 64, batches of 1,000 tokens), Adam with ``lr``
    on an inverse-sqrt schedule, on one CPU core or in fp16 on a GPU; ``stopping``
    (fairseq-train options) and ``patience`` (dev evaluations without improvement) end it, by
    default after --updates updates."""
    corpus = run.corpus
    return Training(data=run.data_bin(data_bin or run.training_data(system)), arch=system_arch(system), save=folder,
                    batch_tokens=corpus.batch_tokens, lr=lr, scheduler="inverse_sqrt", patience=str(patience),
                    max_epochs=1000, seed=str(train_seed), n_shards=1,
                    extra=[*corpus.model, "--warmup-updates", str(corpus.warmup),
                           *(stopping or ("--max-update", str(run.updates))), "--log-interval", "100",
                           "--num-workers", "0"])


def train_step(run: DemoRun, training: Training, follows: Sequence[Path] = (), label: str = "") -> Step:
    """A GPU model is never taken for a CPU one.  ``label``: what the console calls the system
    (default: its folder's name)."""
    on_gpu = ["--device", "gpu"] if run.gpus else []
    return training.step(1 if run.gpus else 0, root=run.out, label=label or training.save.name, on_change="redo",
                         identity_extra=on_gpu, follows=follows)


def translate_steps(run: DemoRun, folder: Path, follows: Sequence[Path] = (),
                    test_sets: Sequence[str] = (), label: str = "") -> List[Step]:
    """The test sets (default: the corpus's) translated with FOLDER's best checkpoint (beam
    5), and with --oracle-length also decoded with each sentence's reference length;
    ``label`` as train_step's."""
    steps = []
    for test_set in test_sets or run.corpus.test_sets:
        for oracle, out in ((False, folder / test_set), (True, oracle_folder(folder, test_set)))[:1 + run.oracle]:
            translation = Translation(checkpoint=folder / "checkpoint_best.pt", testset=run.data / "testsets" / test_set,
                                      out=out, cpu=not run.gpus, extra=list(run.corpus.translate),
                                      user_dir="fairseq_relpos", oracle=oracle)
            steps += translation.steps(run.corpus.langs, root=run.out, label=label or folder.name,
                                       gpus=1 if run.gpus else 0,
                                       follows=follows)
    return steps


def report_step(run: DemoRun, test_set: str, systems: Dict[str, Path]) -> Step:
    testset = run.data / "testsets" / test_set
    report = run.out / "report" / test_set
    named, read = system_options({arch: [folder] for arch, folder in systems.items()}, test_set, run.oracle)
    command = [tool("report"), "--source", testset / "seg.src", "--length-file", testset / "longer-side",
               "--ref", testset / "raw.tgt", *named, "--baseline", next(iter(systems)), "--tokenize", "none",
               "--metrics", "bleu,ter", "--edges", run.edges(test_set), "--train-limit", run.limit,
               "--bootstrap", 200, "--seed", run.seed,
               "--title", f"Demo, {test_set}: trained on pairs of up to {run.limit} subword tokens (length: longer side)",
               "--out-dir", OutDir(report)]
    return Step("report", command, home=report, root=run.out,
                inputs=[testset / "seg.src", testset / "longer-side", testset / "raw.tgt", *read],
                display=Display(echo=False, title=f"report {test_set}"))


def demo_graph(run: DemoRun) -> Graph:
    """The data, each system (its training, then its translations of both test sets) and
    the reports."""
    systems = {system: run.out / system for system in run.systems}
    jobs = [Job("prepare", run.corpus.steps(run), kind="prepare")]
    for system, save in systems.items():
        jobs.append(Job(system, [train_step(run, demo_training(run, system, run.seed, save)),
                                 *translate_steps(run, save)]))
    jobs.append(Job("reports", [report_step(run, test_set, systems) for test_set in run.corpus.test_sets],
                    kind="report"))
    return Graph(jobs, roots=[run.out])


def demo_main(argv: Sequence[str]) -> int:
    args = demo_parser("demo.sh").parse_args(argv)
    args.systems = args.systems or DEMO_SYSTEMS.split(",")
    args.train_limit = args.train_limit or 50
    args.updates = args.updates or 2300
    args.out_dir = args.out_dir or REPO / "runs" / "demo"
    run_ = demo_run(args, args.systems)
    if not args.run_job:
        check_archs("--systems", run_.archs)
        if run_.concat:
            check_archs("--concat-systems", run_.concat)
        for path in (run_.data, *(run_.out / system for system in run_.systems),
                     *(run_.out / "report" / test_set for test_set in run_.corpus.test_sets)):
            refuse_unless_ours(path)
    launch = Launch.from_args("demo", argv, args, threads=run_.threads, gpus=run_.gpus, console=ProgressConsole(),
                              environment=RECIPE_ENVIRONMENT)
    began = time.monotonic()
    outcome = run(demo_graph(run_), launch)
    if launch.finishes_here:
        if launch.launcher == "local":
            launch.console.log(f"done in {time.monotonic() - began:.0f} s")
        print_outputs(run_.out / "report", run_.corpus.test_sets, "report.md",
                      "report.md, report.json, buckets.png, lengths.png", outcome)
    return 0


def print_outputs(folder: Path, test_sets: Sequence[str], table: str, files: str,
                  outcome: Optional[Outcome] = None) -> None:
    """Each test set's table, then where its files are; a table the run did not write is an
    error naming it, with the failure that kept it from being written where ``outcome`` (a
    local run's) says."""
    missing = [folder / test_set / table for test_set in test_sets if not (folder / test_set / table).is_file()]
    if missing:
        failures = [error.splitlines()[0] for error in (outcome.failed.values() if outcome else [])]
        why = failures[-1] if failures else "the steps that write it did not finish"
        more = f" ({len(failures)} steps failed, each listed above)" if len(failures) > 1 else ""
        raise StepError(f"{missing[0]} was not written: {why}{more}")
    for test_set in test_sets:
        print((folder / test_set / table).read_text(encoding="utf-8"))
    for test_set in test_sets:
        print(f"{table.split('.')[0]}: {folder / test_set} ({files})")
