"""Training and translating as steps, and the command lines of train.sh and translate.sh.

A training step runs fairseq-train in its save folder, in place (it resumes from
checkpoint_last.pt); its manifest is SAVE/.steps/train.json and fairseq's output goes to
SAVE/train.log.  A translation step runs fairseq-generate and writes generate.log, hyp.seg,
hyp.tok and hyp.txt in its folder.
"""
import dataclasses
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from ..engine import Display, Graph, Job, Launch, Out, Policy, ProgressFormat, Resources, Step, StepError, run
from ..engine import manifest
from ..tools import option_value
from ..tools.fairseq_train import FAIRSEQ_CHECKPOINTS, check_checkpoint, checkpoint_facts
from . import PY, tool
from .data import read_env
from .options import Parser, absolute, fairseq_path, folder, non_negative_int, positive_int
from relpos_analysis import fairseq_log

# a recipe's training, and train.sh's (which can go on from the other settings' checkpoint)
TRAINED_REFUSAL = ("{home} holds a model trained with other settings ({change}); train in another folder, "
                   "or move its checkpoints away to train afresh there")
TRAIN_SH_REFUSAL = ("{home} holds a model trained with other settings ({change}); use another --save-dir, or "
                    "--resume-with-changes to go on from its checkpoint_last.pt with these (a larger --max-update "
                    "or --max-epochs, another --lr)")
PRECISIONS = ("auto", "fp32", "fp16", "amp")
# how fairseq-train's and fairseq-generate's lines say how far they got, for the console's progress lines
FAIRSEQ_PROGRESS = ProgressFormat(updates=fairseq_log.UPDATES, loss=fairseq_log.TRAIN_LOSS,
                                  dev_loss=fairseq_log.DEV_LOSS, max_updates=fairseq_log.MAX_UPDATE)


@dataclasses.dataclass
class Training:
    """What train.sh's options say (the study's optimisation by default, Rosendahl et al. 2019 §4.1)."""

    data: Path
    arch: str
    save: Path
    user_dir: str = "fairseq_relpos"
    batch_tokens: int = 4700
    update_freq: int = 1
    gpus: Optional[int] = None  # None: all visible
    precision: str = "auto"
    lr: str = "3e-4"
    scheduler: str = "reduce_lr_on_plateau"
    lr_shrink: str = "0.9"
    lr_patience: str = "6"
    patience: str = "24"
    max_epochs: int = 20
    seed: str = "1"
    keep: int = 0
    extra: Sequence[str] = ()
    dry_run: bool = False
    resume_with_changes: bool = False  # train.sh's --resume-with-changes
    # the data's training shards, where the data is not there yet to count them (a graph
    # declared before its preparation ran); None: counted
    n_shards: Optional[int] = None

    def settings(self) -> List[str]:
        """What makes the model (not where it trains): a finished folder is reused only for
        the same settings, and a folder holding another model is never trained on."""
        return [str(x) for x in (
            "--arch", self.arch, "--data", self.data, "--user-dir", self.user_dir,
            "--batch-tokens", self.batch_tokens, "--update-freq", self.update_freq, "--precision", self.precision,
            "--lr", self.lr, "--lr-scheduler", self.scheduler, "--lr-shrink", self.lr_shrink,
            "--lr-patience", self.lr_patience, "--patience", self.patience, "--max-epochs", self.max_epochs,
            "--seed", self.seed, "--keep-epoch-checkpoints", self.keep, *self.extra)]

    def shards(self) -> List[Path]:
        """The data's shard folders (one per fairseq epoch), or none for a plain data-bin."""
        if self.n_shards is not None:
            return [self.data / f"shard{k}" for k in range(self.n_shards)]
        found = []
        while (self.data / f"shard{len(found)}").is_dir():
            found.append(self.data / f"shard{len(found)}")
        return found

    def command(self, gpus: int, tasks: int = 1) -> List[str]:
        """fairseq-train's command line on ``gpus`` GPUs (0: the CPU), or run as ``tasks``
        processes under srun, one per GPU (one per CPU process with gloo), on one node or
        several: fairseq then initialises through SLURM (--distributed-port)."""
        shards = self.shards()
        data_path = ":".join(map(str, shards)) if shards else str(self.data)
        precision = self.precision if self.precision != "auto" else ("fp16" if gpus else "fp32")
        if tasks > 1:
            workers = tasks
            device = ["--distributed-world-size", str(tasks), "--distributed-port", str(distributed_port())]
            device += [] if gpus else ["--cpu", "--distributed-backend", "gloo"]
        else:
            workers = max(gpus, 1)
            device = ["--cpu"] if gpus == 0 else ["--distributed-world-size", str(gpus)]
        device += {"fp16": ["--fp16"], "amp": ["--amp"]}.get(precision, [])
        per_gpu = -(-self.batch_tokens // (workers * self.update_freq))  # ceil: the batch stays batch_tokens
        scheduler = ["--lr-scheduler", self.scheduler]
        if self.scheduler == "reduce_lr_on_plateau":
            scheduler += ["--lr-shrink", self.lr_shrink, "--lr-patience", self.lr_patience, "--warmup-updates", "0"]
        checkpoints = ["--keep-last-epochs", str(self.keep)] if self.keep > 0 else ["--no-epoch-checkpoints"]
        user_dir = ["--user-dir", self.user_dir] if self.user_dir != "none" else []
        return [str(x) for x in (
            "fairseq-train", data_path, *user_dir, "--arch", self.arch, "--task", "translation",
            "--optimizer", "adam", "--adam-betas", "(0.9, 0.999)", "--lr", self.lr, *scheduler,
            "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
            "--max-tokens", per_gpu, "--update-freq", self.update_freq,
            "--best-checkpoint-metric", "ppl", "--patience", self.patience,
            "--max-epoch", self.max_epochs * max(len(shards), 1), "--save-dir", self.save,
            "--save-interval", "1", "--validate-interval", "1", *checkpoints,
            "--skip-invalid-size-inputs-valid-test", "--seed", self.seed, "--log-format", "simple",
            "--log-interval", "100", *device, *self.extra)]

    def step(self, gpus: int, *, root: Optional[Path] = None, label: str = "", on_change: str = "refuse",
             refusal: str = TRAINED_REFUSAL, identity_extra: Sequence[str] = (), tasks: int = 1, srun: bool = False,
             cpus: int = 1, follows: Sequence[Path] = ()) -> Step:
        """The training step.  With ``srun`` it starts its ``tasks`` processes itself (a
        recipe's job on several GPUs or nodes); without, it is rank 0 of a train.sh that srun
        started.  Either way the model is the same: only its settings identify it.
        ``follows``: files besides the data it is downstream of (the leaderboard's choice)."""
        save = self.save
        env = {} if gpus else {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        launcher = ["srun", f"--ntasks={tasks}", "--kill-on-bad-exit=1"] if srun and tasks > 1 else []
        command = [*launcher, tool("train"), "--save-dir", save, "--", *self.command(gpus, tasks)]
        made = [re.compile(pattern) for pattern in FAIRSEQ_CHECKPOINTS]
        return Step("train", command, home=save, root=root, inputs=[self.data, *follows],
                    # its log too: what the leaderboard's choice reads of it (its dev losses)
                    in_place_outputs=[save / "checkpoint_best.pt", save / "checkpoint_last.pt", save / "train.log"],
                    identity=self.settings(), identity_extra=identity_extra,
                    policy=Policy(on_change=on_change, refusal=refusal,
                                  keeps_state=lambda: save.is_dir() and any(
                                      any(m.fullmatch(p.name) for m in made) for p in save.iterdir()),
                                  owns=(*FAIRSEQ_CHECKPOINTS, "train\\.log")),
                    resources=Resources(cpus=cpus, gpus=1 if gpus else 0, env=env),
                    display=Display(label=label, title=f"train {label or self.arch}", log=save / "train.log",
                                    progress=FAIRSEQ_PROGRESS))

    def check(self) -> None:
        if self.precision == "bf16":
            raise StepError("--precision bf16: fairseq 0.12.2 turns --bf16 into --tpu (XLA) and cannot train in "
                            "bf16 on GPUs (facebookresearch/fairseq#4696); use fp16 or amp")
        if self.precision not in PRECISIONS:
            raise StepError("--precision: auto, fp16, amp or fp32")
        # inverse_sqrt divides by the warm-up: it needs one (fairseq's default is 4000 updates)
        warmup = option_value(self.extra, "--warmup-updates")
        if self.scheduler == "inverse_sqrt" and warmup is not None and warmup.strip() == "0":
            raise StepError("--lr-scheduler inverse_sqrt needs --warmup-updates of at least 1")

    def check_device(self, gpus: int) -> None:
        """What fairseq-train would refuse only after reading the data, on ``gpus`` GPUs (0: the CPU)."""
        if gpus:
            return
        if self.precision == "fp16":
            raise StepError("--precision fp16 trains on GPUs only (fairseq's --fp16 needs CUDA), and this training runs "
                            "on the CPU: use --precision fp32 (or auto, which chooses it on the CPU)")
        if option_value(self.extra, "--attention-impl") == "flex":
            raise StepError("--attention-impl flex trains on GPUs only (FlexAttention has no backward pass on the "
                            "CPU), and this training runs on the CPU: use --attention-impl reference (a model trained so "
                            "translates with flex on the CPU too)")


# a fairseq dictionary's entries before the words of its file: <s>, <pad>, </s>, <unk>
FAIRSEQ_SPECIAL_SYMBOLS = 4


def dictionary_words(path: Path) -> List[str]:
    """The words of a fairseq dictionary file (``dict.de.txt``), in its order."""
    try:
        with open(path, encoding="utf-8") as f:
            return [line.split(" ", 1)[0] for line in f]
    except OSError as err:
        raise StepError(f"cannot read the dictionary {path}: {err.strerror or err}") from None


def distributed_port() -> int:
    """The port fairseq's tasks meet on: one per SLURM job, so that two jobs sharing a node
    do not collide."""
    return 10000 + int(os.environ.get("SLURM_JOB_ID", "0")) % 20000


def srun_tasks() -> Tuple[int, int]:
    """(tasks, this task's rank) when srun started this process as one of several tasks."""
    if os.environ.get("SLURM_STEP_ID") is None or os.environ.get("SLURM_PROCID") is None:
        return 1, 0
    return int(os.environ.get("SLURM_NTASKS", "1")), int(os.environ["SLURM_PROCID"])


def visible_gpus() -> int:
    """The GPUs torch sees (asked only where nvidia-smi lists one: a CPU machine starts no
    Python for it)."""
    if not shutil.which("nvidia-smi") or subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode:
        return 0
    proc = subprocess.run([PY, "-c", "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"],
                          capture_output=True, text=True)
    if proc.returncode:
        raise StepError("could not query torch for GPUs (is the environment set up?)")
    return int(proc.stdout.strip() or 0)


def check_data(data: Path) -> None:
    if not (data / "shard0").is_dir() and not list(data.glob("dict.*.txt")):
        raise StepError(f"{data}: no fairseq data (expected shard0/ from prepare-wmt19-*.sh, or dict.*.txt)")


def train_parser() -> Parser:
    parser = Parser("train.sh")
    parser.add_argument("--data", type=folder)
    parser.add_argument("--arch")
    parser.add_argument("--save-dir", type=folder)
    parser.add_argument("--user-dir", default="fairseq_relpos")
    parser.add_argument("--batch-tokens", type=positive_int, default=4700)
    parser.add_argument("--update-freq", type=positive_int, default=1)
    parser.add_argument("--gpus", type=_gpu_count)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--lr", default="3e-4")
    parser.add_argument("--lr-scheduler", default="reduce_lr_on_plateau")
    parser.add_argument("--lr-shrink", default="0.9")
    parser.add_argument("--lr-patience", default="6")
    parser.add_argument("--patience", default="24")
    parser.add_argument("--max-epochs", type=positive_int, default=20)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--keep-epoch-checkpoints", type=non_negative_int, default=0)
    parser.add_argument("--resume-with-changes", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    return parser


def train_options(argv: Sequence[str], **given) -> Training:
    """A Training from train.sh's command line ``argv`` (what it does not know goes to
    fairseq-train, as does everything after ``--``); ``given`` sets fields besides."""
    args, extra = train_parser().parse_known_args(_before_separator(argv))
    extra += _after_separator(argv)
    fields = dict(data=absolute(args.data) if args.data else None, arch=args.arch,
                  save=absolute(args.save_dir) if args.save_dir else None, user_dir=args.user_dir,
                  batch_tokens=args.batch_tokens, update_freq=args.update_freq, gpus=args.gpus,
                  precision=args.precision, lr=args.lr, scheduler=args.lr_scheduler, lr_shrink=args.lr_shrink,
                  lr_patience=args.lr_patience, patience=args.patience, max_epochs=args.max_epochs,
                  seed=args.seed, keep=args.keep_epoch_checkpoints, extra=extra)
    fields.update(given)
    training = Training(**fields, dry_run=args.dry_run, resume_with_changes=args.resume_with_changes)
    training.check()
    return training


def train_main(argv: Sequence[str]) -> int:
    training = train_options(argv)
    if not (training.data and training.arch and training.save):
        raise StepError("--data, --arch and --save-dir are required (see --help)")
    if training.dry_run:
        print(shlex.join(training.command(training.gpus if training.gpus is not None else 1)))
        return 0
    check_data(training.data)
    visible = visible_gpus()
    if training.gpus is not None and training.gpus > visible:
        raise StepError(f"--gpus {training.gpus} but only {visible} GPU(s) visible")
    gpus = visible if training.gpus is None else training.gpus
    training.check_device(gpus)
    tasks, rank = srun_tasks()
    if tasks > 1:  # one of srun's tasks: one GPU each (or the CPU), one model
        gpus = min(gpus, 1)
    step = training.step(gpus, tasks=tasks, refusal=TRAIN_SH_REFUSAL,
                         on_change="go_on" if training.resume_with_changes else "refuse")
    if rank > 0:  # only rank 0 keeps the manifest, train.log and the lock
        return subprocess.run(step.argv(), env={**os.environ, **step.resources.env}).returncode
    run(Graph([Job("train", [step])], roots=[training.save]),
        Launch("train", argv, threads=1, gpus=gpus))
    return 0


def _gpu_count(text: str) -> int:
    if not text.isdigit():
        import argparse

        raise argparse.ArgumentTypeError(f"expected the number of GPUs to use (0 for the CPU), got '{text}'")
    return int(text)


def _before_separator(argv: Sequence[str]) -> List[str]:
    return list(argv[:argv.index("--")]) if "--" in argv else list(argv)


def _after_separator(argv: Sequence[str]) -> List[str]:
    return list(argv[argv.index("--") + 1:]) if "--" in argv else []


# ----------------------------------------------------------------------------------------
# translation
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Translation:
    checkpoint: Path
    testset: Path
    out: Path
    beam: str = "5"
    lenpen: str = "1.0"
    max_len_a: str = "2"
    max_len_b: str = "10"
    max_tokens: str = "8000"
    user_dir: str = "auto"
    cpu: bool = False
    extra: Sequence[str] = ()
    # each sentence decoded with its reference's length in target subwords (the plugin's
    # relpos_translation task, docs/plugin.md): how much of a failure is the stopping decision
    oracle: bool = False

    @property
    def described(self) -> str:
        return self.testset.name + (" at oracle lengths" if self.oracle else "")

    def recorded_user_dir(self) -> str:
        """--user-dir: what the training recorded next to the checkpoint (fairseq_relpos when
        it recorded nothing)."""
        if self.user_dir != "auto":
            return self.user_dir
        trained = manifest.at(self.checkpoint.parent, "train")
        if trained is not None:
            return trained.option("--user-dir") or "none"
        return "fairseq_relpos"

    def generate_command(self, src: str, tgt: str) -> List[str]:
        user_dir = self.recorded_user_dir()
        return [str(x) for x in (
            "fairseq-generate", self.testset / "bin", "--path", self.checkpoint,
            *(["--user-dir", user_dir] if user_dir not in ("none", "") else []),
            *(["--task", "relpos_translation", "--oracle-length"] if self.oracle else ["--task", "translation"]),
            "--source-lang", src, "--target-lang", tgt,
            "--gen-subset", "test", "--beam", self.beam, "--lenpen", self.lenpen, "--max-len-a", self.max_len_a,
            "--max-len-b", self.max_len_b, "--max-tokens", self.max_tokens, "--seed", "1",
            *(["--cpu"] if self.cpu else []), *self.extra)]

    def step(self, langs: Sequence[str], *, root: Optional[Path] = None, label: str = "",
             gpus: int = 0, cpus: int = 1, follows: Sequence[Path] = ()) -> Step:
        """The translation step; ``langs`` (source, target) as the test set was built with.
        Its tool reads the test set's size and segmentation when it runs, so the step can be
        declared before the test set is built."""
        generate = self.generate_command(*langs)
        out = self.out
        command = [tool("translate"), "--testset", self.testset, "--log", Out(out / "generate.log"),
                   "--hyp-seg", Out(out / "hyp.seg"), "--hyp-tok", Out(out / "hyp.tok"),
                   "--hyp-txt", Out(out / "hyp.txt"), "--", *generate]
        inputs = [self.checkpoint, self.testset / "bin", self.testset / "meta.env",
                  self.testset.parent.parent / "segmentation.env", *follows]
        env = {} if gpus else {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        return Step("translate", command, home=out, root=root, inputs=inputs,
                    resources=Resources(cpus=cpus, gpus=1 if gpus else 0, env=env),
                    display=Display(label=label, log=out / "translate.log", progress=FAIRSEQ_PROGRESS,
                                    title=f"translate {self.described}" + (f" with {label}" if label else "")))

    def scores_step(self, *, root: Optional[Path] = None, label: str = "") -> Step:
        """Each hypothesis's mean log2-probability per token (hyp.scores), from the
        translation's generate.log: a step of its own, so that translations made before it
        existed stay done."""
        out = self.out
        return Step("log-probs", [tool("log-probs"), "--testset", self.testset, "--log", out / "generate.log",
                                  "--out", Out(out / "hyp.scores")],
                    home=out, root=root, inputs=[out / "generate.log", self.testset / "meta.env"],
                    display=Display(echo=False, title=f"log-probabilities of {self.described}"
                                                      + (f" with {label}" if label else "")))

    def steps(self, langs: Sequence[str], *, root: Optional[Path] = None, label: str = "", gpus: int = 0,
              cpus: int = 1, follows: Sequence[Path] = ()) -> List[Step]:
        """The translation and its log-probabilities."""
        return [self.step(langs, root=root, label=label, gpus=gpus, cpus=cpus, follows=follows),
                self.scores_step(root=root, label=label)]

    def check(self) -> None:
        if self.oracle and self.recorded_user_dir() in ("none", ""):
            raise StepError("--oracle-length decodes with the plugin's task: the model needs --user-dir fairseq_relpos")
        if not self.checkpoint.is_file():
            raise StepError(f"no checkpoint {self.checkpoint} (train it with scripts/train.sh)")
        if not (self.testset / "meta.env").exists() or not (self.testset / "bin").is_dir():
            raise StepError(f"{self.testset} is not a complete test set (build it with scripts/build-test-sets.sh)")
        segmentation = self.testset.parent.parent / "segmentation.env"
        if not segmentation.is_file():
            raise StepError(f"{self.testset} is not in a prepared folder: its hypotheses are de-segmented as its "
                            f"preparation says, in {segmentation}, two folders up (a test set lives in "
                            "PREPARED/testsets/NAME), which is missing; translate the test set where "
                            "build-test-sets.sh made it")
        try:
            check_checkpoint(self.checkpoint)
        except SystemExit as refusal:
            raise StepError(str(refusal).removeprefix("error: ")) from None
        self.check_dictionaries()

    def check_dictionaries(self) -> None:
        """The test set's dictionaries must be the model's: of the same size as its embeddings
        (else torch's size mismatch), and, where the model's training data is found, the same
        words in the same order (a corpus prepared again with another seed numbers its words
        otherwise: the model would translate other words, without a word of warning)."""
        meta = read_env(self.testset / "meta.env")
        facts = checkpoint_facts(self.checkpoint)
        trained = self.model_dictionaries(facts.data, (meta["SRC"], meta["TGT"]))
        redo = ("build it with scripts/build-test-sets.sh in the preparation the model's data comes from"
                + (f" ({trained.parent if trained.name.startswith('shard') else trained})" if trained else ""))
        for side, lang in (("encoder", meta["SRC"]), ("decoder", meta["TGT"])):
            given = self.testset / "bin" / f"dict.{lang}.txt"
            words = dictionary_words(given)
            if side in facts.embeddings and facts.embeddings[side] != len(words) + FAIRSEQ_SPECIAL_SYMBOLS:
                raise StepError(f"{given} has {len(words) + FAIRSEQ_SPECIAL_SYMBOLS} entries, but {self.checkpoint} was "
                                f"trained with a {lang} dictionary of {facts.embeddings[side]}: {self.testset} was built "
                                f"by another preparation; {redo}")
            if trained is not None and dictionary_words(trained / f"dict.{lang}.txt") != words:
                raise StepError(f"{given} is not the {lang} dictionary {self.checkpoint} was trained with "
                                f"({trained / f'dict.{lang}.txt'}): its words are numbered otherwise, so the model "
                                f"would read other words; {self.testset} was built by another preparation; {redo}")

    def model_dictionaries(self, recorded_data: Optional[str], langs: Sequence[str]) -> Optional[Path]:
        """The folder of the dictionaries the model was trained with: in the data its
        training's manifest names (which moves with the folder), or the data the checkpoint
        records; None where neither is there any more."""
        candidates = []
        trained = manifest.at(self.checkpoint.parent, "train")
        data = trained.option("--data", of=trained.identity) if trained is not None else None
        if data:
            data = trained.absolute(self.checkpoint.parent, data)
            candidates += [data / "shard0", data]
        if recorded_data:
            candidates.append(Path(recorded_data.split(":")[0]))
        return next((folder for folder in candidates
                     if all((folder / f"dict.{lang}.txt").is_file() for lang in langs)), None)


def translate_main(argv: Sequence[str]) -> int:
    parser = Parser("translate.sh")
    parser.add_argument("--checkpoint", type=fairseq_path)
    parser.add_argument("--testset", type=folder)
    parser.add_argument("--out-dir", type=folder)
    parser.add_argument("--beam", default="5")
    parser.add_argument("--lenpen", default="1.0")
    parser.add_argument("--max-len-a", default="2")
    parser.add_argument("--max-len-b", default="10")
    parser.add_argument("--max-tokens", default="8000")
    parser.add_argument("--user-dir", default="auto")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--oracle-length", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    args, extra = parser.parse_known_args(_before_separator(argv))
    extra += _after_separator(argv)
    if not (args.checkpoint and args.testset and args.out_dir):
        raise StepError("--checkpoint, --testset and --out-dir are required (see --help)")
    translation = Translation(checkpoint=absolute(args.checkpoint), testset=absolute(args.testset),
                              out=absolute(args.out_dir), beam=args.beam, lenpen=args.lenpen,
                              max_len_a=args.max_len_a, max_len_b=args.max_len_b, max_tokens=args.max_tokens,
                              user_dir=args.user_dir, cpu=args.cpu, extra=extra, oracle=args.oracle_length)
    if args.dry_run:
        meta = read_env(translation.testset / "meta.env") if (translation.testset / "meta.env").exists() else {}
        print(shlex.join(translation.generate_command(meta.get("SRC", "SRC"), meta.get("TGT", "TGT"))))
        return 0
    translation.check()
    meta = read_env(translation.testset / "meta.env")
    gpus = 0 if args.cpu else visible_gpus()
    run(Graph([Job("translate", translation.steps((meta["SRC"], meta["TGT"]), gpus=gpus))], roots=[translation.out]),
        Launch("translate", argv, threads=1, gpus=gpus))
    print(translation.out / "hyp.txt")
    return 0
