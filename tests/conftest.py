"""Shared fixtures: tiny models built in-process, and tiny corpora for the fairseq CLIs."""
import ast
import functools
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Set, Tuple

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
BIN_DIR = Path(sys.executable).parent
# A command prefix that starts the command as a terminal's foreground process starts, with
# SIGINT (Ctrl-C) at its default: where the suite itself was started with SIGINT ignored (under
# nohup, or as a shell's background job), its children inherit that, and a Python that starts
# with SIGINT ignored never raises KeyboardInterrupt.
CTRL_C_DEFAULT = [sys.executable, "-S", "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                  "os.execvp(sys.argv[1], sys.argv[1:])"]


def pytest_collection_modifyitems(items):
    """The modules with slow tests first, each module's tests kept together (its fixtures are
    set up once): the workers start on the longest work and the many quick tests fill in at
    the end, instead of one long test running alone while the other worker idles."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # stable: the order within stays


@functools.lru_cache(maxsize=None)
def local_slurm() -> Tuple[Optional[str], str]:
    """(SLURM_CONF of a running one-node cluster, started by scripts/local-slurm.sh if none
    answers; or None, why it could not be started)."""
    directory = Path(os.environ.get("RELPOS_SLURM_DIR", "/tmp/relpos-slurm"))
    proc = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "local-slurm.sh"), "start"], capture_output=True,
                          text=True, env={**os.environ, "RELPOS_SLURM_DIR": str(directory)})
    if proc.returncode != 0:
        return None, f"no SLURM cluster: scripts/local-slurm.sh start failed: {proc.stderr.strip()[-300:]}"
    return str(directory / "slurm.conf"), ""


@pytest.fixture(scope="session")
def slurm():
    """SLURM_CONF of a running one-node cluster, started here if none answers."""
    conf, why_not = local_slurm()
    if conf is None:
        pytest.skip(why_not)
    return conf


def poll_slurm(command, slurm, until, seconds=30):
    """Asks SLURM (squeue, scontrol) every half second until ``until(its output)`` holds, for at
    most ``seconds``: its output, or an AssertionError with the last one.  What SLURM shows
    right after a command (sbatch, scancel, a job's end) can be a state on its way."""
    env = {**os.environ, "SLURM_CONF": slurm}
    deadline = time.monotonic() + seconds
    while True:
        said = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env).stdout
        if until(said):
            return said
        assert time.monotonic() < deadline, f"{' '.join(map(str, command))}: not as awaited after {seconds} s: {said}"
        time.sleep(0.5)


def cluster_report(jobs, runs, slurm):
    """What SLURM says of a recipe's ``jobs`` (name -> id) and the end of their logs under
    ``runs``/slurm, with the end of the controller's log: why a test waited in vain."""
    env = {**os.environ, "SLURM_CONF": slurm}
    said = [subprocess.run(command, capture_output=True, text=True, env=env).stdout
            for command in (["sinfo", "-N", "-l"], ["squeue", "-j", ",".join(jobs.values()), "-o", "%i %j %T %r"])]
    for job_id in jobs.values():
        shown = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, env=env).stdout
        said.append(" ".join(re.findall(r"(?:JobId|JobState|Reason|NumCPUs|NodeList)=\S*", shown)))
    for log in sorted((runs / "slurm").glob("*.out")):
        said.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
    controller = Path(slurm).parent / "log" / "slurmctld.log"
    if controller.exists():
        said.append(f"--- {controller}\n" + "\n".join(controller.read_text(errors="replace").splitlines()[-25:]))
    return "\n".join(said)


def run_command(command, env=None, check=True, cwd=None):
    """Runs a command (a script of scripts/, a fairseq command) as a user would, in the
    environment the tests run in (which the scripts need not check again); the
    CompletedProcess, or with ``check`` an AssertionError holding the end of its output."""
    full_env = {**os.environ, **(env or {})}
    if os.environ.get("VIRTUAL_ENV"):
        full_env["PL_ENV_READY"] = os.environ["VIRTUAL_ENV"]
    proc = subprocess.run([str(c) for c in command], capture_output=True, text=True, env=full_env,
                          cwd=cwd or REPO_ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"{command} failed ({proc.returncode})\nSTDOUT:\n{proc.stdout[-4000:]}"
                             f"\nSTDERR:\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="session", autouse=True)
def statistics_cache(tmp_path_factory):
    """The reports the tests make cache sentence statistics in a folder of the test session,
    not in the user's ~/.cache: a run neither leaves files there nor reuses earlier runs' work."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RELPOS_CACHE_DIR", str(tmp_path_factory.mktemp("statistics-cache")))
        yield


def shared_path(*parts) -> Path:
    """A path under ../shared, or a clean skip where it is absent (a user's clone)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (shared data lives beside the checkout)")
    return path


def imported(path: Path, package: str) -> Set[str]:
    """The modules ``path``, a module of ``package``, imports anywhere (a function's own imports
    included), by full name; in relpos_recipes.engine ``from . import manifest`` as
    relpos_recipes.engine.manifest."""
    parts = package.split(".")
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(parts[:len(parts) - node.level + 1] + [node.module] if node.module
                            else parts[:len(parts) - node.level + 1]) if node.level else node.module
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


# --- in-process models -----------------------------------------------------------------
TINY_DIMS = dict(
    encoder_layers=2,
    decoder_layers=2,
    encoder_embed_dim=32,
    decoder_embed_dim=32,
    encoder_ffn_embed_dim=48,
    decoder_ffn_embed_dim=48,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    dropout=0.0,
    max_relative_position=3,  # small k, so short test sequences already clip
)


def tiny_dictionary(size=24):
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    for index in range(size):
        dictionary.add_symbol(f"w{index}")
    return dictionary


def build_tiny_model(arch, dictionary=None, **overrides):
    """A relpos_transformer of `arch` with tiny dims, in eval mode, seeded."""
    import torch

    from fairseq_relpos import build_standalone_model

    torch.manual_seed(0)
    return build_standalone_model(arch, dictionary or tiny_dictionary(), **{**TINY_DIMS, **overrides}).eval()


# --- tiny corpora and the fairseq command line -----------------------------------------
def write_reversal_corpus(directory: Path, seed=1, sizes=(("train", 400), ("valid", 40), ("test", 40)),
                          min_len=3, max_len=12):
    """A copy-and-reverse task with upper-cased target words: position matters."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(30)]
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in sizes:
        with open(directory / f"{split}.src", "w") as src, open(directory / f"{split}.tgt", "w") as tgt:
            for _ in range(count):
                sentence = [rng.choice(words) for _ in range(rng.randint(min_len, max_len))]
                src.write(" ".join(sentence) + "\n")
                tgt.write(" ".join(word.upper() for word in reversed(sentence)) + "\n")
    return directory


def fairseq(command, *args, cwd=None, check=True, env=None):
    """Runs a stock fairseq console script of this environment; returns the CompletedProcess."""
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    result = subprocess.run(
        [str(BIN_DIR / command), *map(str, args)],
        cwd=cwd, env=full_env, capture_output=True, text=True,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{command} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result


def fairseq_in_process(command, *args, cwd=None):
    """Runs a stock fairseq command in this process, through the function its console script
    calls (``fairseq_cli.train.cli_main`` for fairseq-train, as fairseq's own tests do): the
    same code as the command, without its 4 s of imports.  Returns what it printed and
    logged (at INFO, fairseq's default), as one text; an error is raised here.  Data loading
    stays in this process unless ``args`` say otherwise: a loader worker forked from the test
    process takes 5 s to shut down."""
    import contextlib
    import importlib
    import io
    import logging

    module = importlib.import_module(f"fairseq_cli.{command.removeprefix('fairseq-')}")
    # fairseq-preprocess loads no batches (and takes no --num-workers), but adds a file handler
    # to its logger on every call (DESTDIR/preprocess.log), closed here
    loader = [] if command == "fairseq-preprocess" else ["--num-workers", "0"]
    own = logging.getLogger(module.__name__)
    own_handlers = list(own.handlers)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    # fairseq_cli's own format (its logging.basicConfig)
    handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)s | %(name)s | %(message)s",
                                           datefmt="%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    level = root.level
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(sys, "argv", [command, *loader, *map(str, args)])  # a later one wins
        if cwd:
            patch.chdir(cwd)
        root.addHandler(handler)
        root.setLevel(logging.INFO)  # setLevel, not the attribute: loggers cache their levels
        try:
            module.cli_main()
        finally:
            root.removeHandler(handler)
            root.setLevel(level)
            for added in [h for h in own.handlers if h not in own_handlers]:
                own.removeHandler(added)
                added.close()
    return out.getvalue()


TINY_TRAIN_ARGS = [
    "--encoder-layers", 1, "--decoder-layers", 1,
    "--encoder-embed-dim", 32, "--decoder-embed-dim", 32,
    "--encoder-ffn-embed-dim", 64, "--decoder-ffn-embed-dim", 64,
    "--encoder-attention-heads", 4, "--decoder-attention-heads", 4,
    "--optimizer", "adam", "--lr", "3e-3", "--max-tokens", 2000,
    "--no-progress-bar", "--log-interval", 10, "--seed", 1, "--num-workers", 0,
]


@pytest.fixture(scope="session")
def reversal_data_bin(tmp_path_factory):
    """The reversal corpus, binarized by fairseq-preprocess (separate dictionaries)."""
    root = tmp_path_factory.mktemp("reversal")
    write_reversal_corpus(root / "text")
    # a test set three times longer than any training sentence
    write_reversal_corpus(root / "long", seed=2, sizes=(("test", 6),), min_len=36, max_len=40)
    fairseq(
        "fairseq-preprocess", "--source-lang", "src", "--target-lang", "tgt",
        "--trainpref", root / "text/train", "--validpref", root / "text/valid",
        "--testpref", f"{root / 'text/test'},{root / 'long/test'}",
        "--destdir", root / "bin", "--workers", 1,
    )
    return root / "bin"
