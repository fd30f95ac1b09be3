"""Systems trained alike, the blocks the recipes of such runs share (the demo, the
leaderboard, the bands recipe, SCAN): the training profile (``TrainingProfile``: the pair, its
model, batch, warm-up, learning rates and buckets; the synthetic pair's ``TOY``, Tatoeba's, a
prepared folder's), the run (``SystemsRun``: the systems, their budget, seed, folder and
devices, and the options that give them), a system's training and translation steps, the
refusal of a folder the recipe did not make, and the tables printed at the end.
"""
import argparse
import dataclasses
import os
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

from ..engine import Step, StepError, add_launcher_options
from ..engine.local import Outcome
from ..engine.step import MANIFEST_DIR
from .data import JOINED_SETS, Prepared, preparation_and_test_sets
from .environment import RecipeEnvironment
from .options import DEFAULT_THREADS, Parser, absolute, folder, name_list, non_negative_int, positive_int
from .prepare import (SMOKE_TATOEBA_PREPARE, smoke_slice, smoke_tatoeba_export, tatoeba_export, tatoeba_pairs_sha,
                      tatoeba_parser, tatoeba_preparation, toy_parser, toy_preparation)
from .presets import SMOKE_MODEL, SMOKE_TRANSLATE, TATOEBA_MODEL, TATOEBA_SETS, tatoeba_edges
from .reports import oracle_folder
from .training import Training, Translation, visible_gpus

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
class TrainingProfile:
    """The language pair a run of systems trains on, and how: its preparation and test sets,
    the model, batch, warm-up, learning rates and bucket edges (the synthetic pair's ``TOY``,
    Tatoeba German-English's, a prepared folder's, a SCAN split's)."""

    name: str
    langs: Tuple[str, str]
    test_sets: Tuple[str, ...]
    model: Tuple[str, ...]  # fairseq-train's model options
    batch_tokens: int
    warmup: int
    tokenize: str  # BLEU's tokenizer: none for the synthetic pair's tokens, 13a for text
    steps: Callable[["SystemsRun"], List[Step]]  # the preparation and the test sets, in OUT/data
    test_edges: Callable[[int], str]
    joined_edges: Callable[[int], str]
    translate: Tuple[str, ...] = ()  # translate.sh's options besides the defaults (beam 5)
    # the leaderboard's default learning rates: log-spaced, a factor of about 3 apart
    lr_grid: Tuple[str, ...] = ("3e-3", "1e-2", "3e-2")
    lr: str = "3e-3"  # a system's learning rate where none is chosen (the bands recipe)


@dataclasses.dataclass
class SystemsRun:
    """A run of several systems trained alike (demo.sh, leaderboard.sh, bands.sh, scan.sh): the
    options they share, and what follows from them."""

    archs: List[str]
    limit: int
    updates: int
    seed: int
    out: Path
    quick: bool
    threads: int
    gpus: int
    profile: Optional[TrainingProfile] = None
    oracle: bool = False  # each model also decodes with its references' lengths
    data_dir: Optional[Path] = None  # a folder prepared beforehand (--data DIR); None: OUT/data
    # architectures also trained on the concatenation-augmented data, as systems ARCH+concat
    concat: List[str] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self.profile = self.profile or TOY

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
        edges = self.profile.joined_edges if test_set in JOINED_SETS else self.profile.test_edges
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


def systems_run(args, archs: Sequence[str], profile: Optional[TrainingProfile] = None) -> SystemsRun:
    """The run the options describe; --quick caps the updates at 200.  Where it runs decides
    its GPUs: --gpus here, --slurm-gpus-per-job for its SLURM jobs, what a job sees in one."""
    gpus = visible_gpus() if args.run_job else args.slurm_gpus_per_job if args.launcher == "slurm" else args.gpus
    if args.launcher == "local" and not args.run_job:
        check_gpus(gpus)
    return SystemsRun(archs=list(archs), limit=args.train_limit, updates=min(args.updates, 200) if args.quick else args.updates,
                   seed=args.seed, out=absolute(args.out_dir), quick=args.quick, threads=args.threads, gpus=gpus,
                   profile=profile, oracle=args.oracle_length, concat=args.concat_systems)


def check_gpus(gpus: int) -> None:
    if gpus:
        visible = visible_gpus()
        if gpus > visible:
            raise StepError(f"--gpus {gpus} but torch sees {visible} GPU(s)")


def refuse_unless_ours(folder: Path, recipe: str) -> None:
    """A folder in the way that the recipe (``recipe``: its script, as the message names it)
    did not make (no step manifests in it or in its subfolders) stops the run before any work."""
    ours = any(True for pattern in (MANIFEST_DIR, f"*/{MANIFEST_DIR}", f"*/*/{MANIFEST_DIR}") for _ in folder.glob(pattern))
    if folder.is_dir() and any(folder.iterdir()) and not ours:
        raise StepError(f"{folder} exists and was not made by {recipe} (no step manifests in it); "
                        "choose another --out-dir or move it away")


# ----------------------------------------------------------------------------------------
# the steps
# ----------------------------------------------------------------------------------------
def toy_steps(run: SystemsRun) -> List[Step]:
    # one worker per step: the data is too small for parallel tools, and the steps themselves
    # run side by side
    args = toy_parser().parse_args([*run.data_args(), "--threads", "1", "--dev-within-limit",
                                    *(["--concat-augment"] if run.concat else [])])
    p = toy_preparation(args, run.data, on_change="redo")
    return preparation_and_test_sets(p, run.profile.test_sets, run.threads)


# up to 2x in halves for the test set, up to 3x for concat_seq, whose joined pairs are twice as long;
# rates from the demo's 3e-3 up: on the first CPU board (grid 1e-3 to 1e-2, three schemes) 1e-3
# was the worst rate of every scheme and the costliest (6,000 updates), 1e-2 the best of all three
TOY = TrainingProfile(name="the synthetic pair", langs=("src", "tgt"), test_sets=("test", "concat_seq"), model=DEMO_MODEL,
             batch_tokens=1000, warmup=100, tokenize="none", steps=toy_steps,
             test_edges=lambda l: f"{l},{l * 3 // 2},{l * 2}", joined_edges=lambda l: f"{l},{l * 2},{l * 3}")


def demo_training(run: SystemsRun, system: str, train_seed: int, folder: Path, lr: str = "3e-3",
                  stopping: Sequence[str] = (), patience: int = -1, data_bin: str = "") -> Training:
    """SYSTEM (an architecture, or ARCH+concat) trained into FOLDER on data-bin/DATA_BIN
    (default: the system's, lenN or lenN-concat): the profile's model
    (the synthetic pair's: 2+2 layers of width 64, batches of 1,000 tokens), Adam with ``lr``
    on an inverse-sqrt schedule, on one CPU core or in fp16 on a GPU; ``stopping``
    (fairseq-train options) and ``patience`` (dev evaluations without improvement) end it, by
    default after --updates updates."""
    profile = run.profile
    return Training(data=run.data_bin(data_bin or run.training_data(system)), arch=system_arch(system), save=folder,
                    batch_tokens=profile.batch_tokens, lr=lr, scheduler="inverse_sqrt", patience=str(patience),
                    max_epochs=1000, seed=str(train_seed), n_shards=1,
                    extra=[*profile.model, "--warmup-updates", str(profile.warmup),
                           *(stopping or ("--max-update", str(run.updates))), "--log-interval", "100",
                           "--num-workers", "0"])


def train_step(run: SystemsRun, training: Training, follows: Sequence[Path] = (), label: str = "") -> Step:
    """A GPU model is never taken for a CPU one.  ``label``: what the console calls the system
    (default: its folder's name)."""
    on_gpu = ["--device", "gpu"] if run.gpus else []
    return training.step(1 if run.gpus else 0, root=run.out, label=label or training.save.name, on_change="redo",
                         identity_extra=on_gpu, follows=follows)


def translate_steps(run: SystemsRun, folder: Path, follows: Sequence[Path] = (),
                    test_sets: Sequence[str] = (), label: str = "", checkpoint: Optional[Path] = None,
                    into: Optional[Path] = None) -> List[Step]:
    """The test sets (default: the profile's) translated with FOLDER's best checkpoint (beam
    5), and with --oracle-length also decoded with each sentence's reference length;
    ``label`` as train_step's.  ``checkpoint``: another of the folder's checkpoints, whose
    translations go to ``into`` (default: FOLDER)."""
    steps = []
    into = into or folder
    for test_set in test_sets or run.profile.test_sets:
        for oracle, out in ((False, into / test_set), (True, oracle_folder(into, test_set)))[:1 + run.oracle]:
            translation = Translation(checkpoint=checkpoint or folder / "checkpoint_best.pt",
                                      testset=run.data / "testsets" / test_set,
                                      out=out, cpu=not run.gpus, extra=list(run.profile.translate),
                                      user_dir="fairseq_relpos", oracle=oracle)
            steps += translation.steps(run.profile.langs, root=run.out, label=label or folder.name,
                                       gpus=1 if run.gpus else 0,
                                       follows=follows)
    return steps


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


def tatoeba_profile(args, environment: RecipeEnvironment, prepare_options: Sequence[str] = ()) -> TrainingProfile:
    """Tatoeba German-English (prepare-tatoeba.sh's split, its dev pairs within the limit) in
    OUT/data, with the Tatoeba study's model and buckets; SMOKE=1: every 85th pair of
    SMOKE_DATA and the tiny SMOKE model.  The export is checked (and, with --download or
    SMOKE=1, written) here, by the recipe's command, never while a graph is built.
    ``prepare_options``: more of prepare-tatoeba.sh's options (length bands)."""
    out = absolute_out(args)
    prepare = ["--max-len", str(args.train_limit), "--threads", str(args.threads), "--out-dir", str(out / "data"),
               *prepare_options]
    model, batch, translate = TATOEBA_MODEL, 2048, ()
    source = args.source
    if environment.smoke:
        data = smoke_tatoeba_export(args, environment.smoke_data)
        source = out / "data" / "raw" / "slice.txt"
        if not args.run_job and not args.dry_run:
            smoke_slice(data, source)
        prepare += SMOKE_TATOEBA_PREPARE
        model, batch, translate = SMOKE_MODEL, 1200, SMOKE_TRANSLATE
    prepare += ["--from", str(source)] if source else (["--download"] if args.download else [])
    prep_args = tatoeba_parser().parse_args([*prepare, *(["--dry-run"] if args.dry_run else [])])
    export = tatoeba_export(prep_args, fetch=not args.run_job)
    pairs_sha = tatoeba_pairs_sha(export, args.dry_run or (environment.smoke and not source.exists()))

    def steps(run_: SystemsRun) -> List[Step]:
        p = tatoeba_preparation(prep_args, export, pairs_sha, on_change="redo", dev_within_limit=True)
        return preparation_and_test_sets(p, TATOEBA_SETS, run_.threads)

    return TrainingProfile(name="Tatoeba De-En", langs=("de", "en"), test_sets=TATOEBA_SETS, model=tuple(model),
                  batch_tokens=batch, warmup=400, tokenize="13a", steps=steps, translate=tuple(translate),
                  lr_grid=("3e-4", "1e-3", "3e-3"), lr="1e-3",  # around tatoeba.sh's 1e-3
                  test_edges=lambda l: tatoeba_edges("test", l), joined_edges=lambda l: tatoeba_edges("concat_seq", l))


def folder_profile(data: Path, steps: Callable[[SystemsRun], List[Step]] = lambda run_: []) -> TrainingProfile:
    """A folder prepared beforehand (--data DIR: prepare-corpus.sh's, or any prepare-*.sh's and
    build-test-sets.sh's): its languages, segmentation and default test sets from its records,
    the Tatoeba study's model, budget and buckets (real text); BLEU on detokenized text with
    13a, on the text itself where it was taken as tokenized (--segmentation none).  ``steps``:
    what a run adds to the folder (length bands, the concatenation augmentation)."""
    if not (data / "segmentation.env").is_file() or not (data / "dict").is_dir():
        raise StepError(f"--data {data}: not a prepared folder (no segmentation.env or dict/); prepare it with "
                        "scripts/prepare-corpus.sh")
    prep = Prepared.read(data)
    for name in prep.default_sets:
        if not (data / "testsets" / name / "meta.env").is_file():
            raise StepError(f"--data {data}: its test set {name} is not built (scripts/build-test-sets.sh "
                            f"--work-dir {data} --sets {name})")
    if not prep.default_sets:
        raise StepError(f"--data {data}: {data / 'testsets.env'} names no test set")
    return TrainingProfile(name=f"{data.name} ({prep.src}-{prep.tgt})", langs=prep.langs, test_sets=tuple(prep.default_sets),
                  model=TATOEBA_MODEL, batch_tokens=2048, warmup=400, tokenize=_bleu_tokenizer(prep),
                  steps=steps, lr_grid=("3e-4", "1e-3", "3e-3"), lr="1e-3",
                  test_edges=lambda l: tatoeba_edges("test", l), joined_edges=lambda l: tatoeba_edges("concat_seq", l))


def _bleu_tokenizer(prep: Prepared) -> str:
    """BLEU's tokenizer for a prepared folder's translations: none where the text was taken
    as tokenized (and translations are not detokenized), sacreBLEU's zh for Chinese, 13a."""
    return "none" if prep.textproc == "none" else "zh" if prep.tgt == "zh" else "13a"


def absolute_out(args) -> Path:
    return Path(os.path.abspath(args.out_dir))
