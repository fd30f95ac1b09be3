"""The step engine: a recipe is a graph of steps, each declaring its inputs, its outputs and
its command; the engine decides from one manifest per step what is done and runs the rest.

A **step** is a command (an argument list) with the files and folders it reads (``inputs``)
and writes (``outputs``).  Steps depend on each other through their paths: a step that reads
what another writes runs after it.  Its **manifest**, ``HOME/.steps/NAME.json``, records the
command, a fingerprint (size, mtime, sha256) of every input, the outputs, the start and end
time, the host, the process and, under a scheduler, its job id.  A step is **done** when its
manifest says it ended, records the command that would run now and inputs with the same
content as now, and its outputs all exist.  Otherwise it runs; a step whose input changed
gets inputs of other content, so everything downstream of a redone step runs again unless
the redone step wrote exactly what it wrote before.

Outputs go through temporary names: a command names its outputs as :class:`Out` (a file or
folder it writes) or :class:`OutDir` (a folder it writes files into), which the engine
renders as hidden temporary paths beside the final ones and renames when the command
succeeded.  A killed step therefore never leaves an output under its final name, and files
a user put beside the outputs are never touched.  Steps that must keep partial work (a
training that resumes from its last checkpoint) are ``in_place``: they write their outputs
where they are, and only the manifest says they finished.

Paths inside a manifest are written relative to the step's ``root`` (a folder that moves as a
unit: the demo's ``--out-dir``, a preparation's ``--work-dir``), the checkout and the Python
interpreter symbolically, so a moved or copied folder, or another clone, is still done.
"""
import dataclasses
import datetime as _dt
import difflib
import fcntl
import glob
import hashlib
import json
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .console import Console

REPO = Path(__file__).resolve().parents[2]
MANIFEST_DIR = ".steps"
MANIFEST_VERSION = 1
TEMP_PREFIX = ".tmp."
_PYTHON = "{python}"
_REPO = "{repo}"
_ROOT = "{root}"


class StepError(Exception):
    """A recipe cannot go on; the message names what and what to do.  Printed as 'error: …'."""


@dataclasses.dataclass(frozen=True)
class Out:
    """An output file or folder named in a command: written under a temporary name.

    ``also``: files the command writes beside it by the same rule (``clean.txt`` given,
    ``clean.json`` written too); ``prefix``: the argument is a prefix the command appends
    suffixes to, and only ``also`` are outputs (``--out-prefix train`` writing
    ``train.de`` and ``train.en``)."""

    path: Path
    also: Tuple[Path, ...] = ()
    prefix: bool = False

    @property
    def outputs(self) -> List[Path]:
        return ([] if self.prefix else [Path(self.path)]) + [Path(p) for p in self.also]


@dataclasses.dataclass(frozen=True)
class OutDir:
    """A folder a command writes files into: they are moved in one by one, so files already
    in the folder that the step did not write stay."""

    path: Path


@dataclasses.dataclass(frozen=True)
class Tool:
    """A tool a command starts with, by its symbolic name: run as ``argv``, recorded as
    ``{tool:NAME}``, so that where the tool lives is no part of what the step is."""

    name: str
    argv: Tuple[str, ...]


Arg = Union[str, int, float, Path, Out, OutDir, Tool]


@dataclasses.dataclass(eq=False)
class Step:
    name: str  # unique in its home; the manifest's file name
    command: Sequence[Arg]
    home: Path  # its manifest lives in HOME/.steps/
    inputs: Sequence[Path] = ()
    in_place_outputs: Sequence[Path] = ()  # written where they are (see module docstring)
    root: Optional[Path] = None  # paths under it are recorded relative to it (default: home)
    label: str = ""  # prefixes its output lines on the console
    echo: bool = True  # whether its output lines go to the console (always to its log)
    title: str = ""  # what the log calls it (default: name)
    on_change: str = "redo"  # or "refuse": a step done with another command is refused
    # the refusal, formatted with {home}, {title}, {manifest} and {change} (what differs)
    refusal: str = ("{home} holds the work of another command ({title}: {change}); use another "
                    "folder, or delete {manifest} to go on with this one")
    identity: Optional[Sequence[str]] = None  # what must match instead of the command
    identity_extra: Sequence[str] = ()  # what must match besides (a checksum of the data)
    cpus: int = 1
    gpus: int = 0
    env: Dict[str, str] = dataclasses.field(default_factory=dict)
    log: Optional[Path] = None  # its output; default HOME/.steps/NAME.log (appended)
    # in_place steps: what makes the leftovers of an earlier command worth refusing over
    # (a training's checkpoints); None: any in-place output
    keeps_state: Optional[Callable[[], bool]] = None
    # in_place steps: the files (globs in HOME) an earlier command of the step left, removed
    # before it runs with another command so that it starts afresh (never other files)
    owns: Sequence[str] = ()
    # an older version's marker that says this step is done (see recipes.legacy)
    legacy_done: Optional[Callable[[], bool]] = None
    # runs even when a step it reads from failed, on the inputs that exist (a choice among
    # the trainings that finished)
    after_failures: bool = False

    def __post_init__(self):
        self.home = Path(self.home)
        self.root = Path(self.root) if self.root is not None else self.home
        if self.on_change not in ("redo", "refuse"):
            raise ValueError(f"on_change: redo or refuse, got {self.on_change!r}")

    # --- paths ------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.home / MANIFEST_DIR / f"{self.name}.json"

    @property
    def log_path(self) -> Path:
        return self.log or self.home / MANIFEST_DIR / f"{self.name}.log"

    @property
    def outputs(self) -> List[Path]:
        declared = []
        for arg in self.command:
            if isinstance(arg, Out):
                declared += arg.outputs
            elif isinstance(arg, OutDir):
                declared.append(Path(arg.path))
        return declared + [Path(p) for p in self.in_place_outputs]

    @property
    def description(self) -> str:
        return self.title or self.name

    @property
    def in_place(self) -> bool:
        return bool(self.in_place_outputs)

    def argv(self, token: Optional[str] = None) -> List[str]:
        """The command to run: outputs at their temporary names for ``token`` (None: final)."""
        return [part for arg in self.command for part in (arg.argv if isinstance(arg, Tool) else [_render(arg, token)])]

    def recorded_command(self) -> List[str]:
        return [f"{{tool:{arg.name}}}" if isinstance(arg, Tool) else self._symbolic(_render(arg, None))
                for arg in self.command]

    def recorded_identity(self) -> List[str]:
        base = [self._symbolic(str(x)) for x in self.identity] if self.identity is not None \
            else self.recorded_command()
        return base + [str(x) for x in self.identity_extra]

    def _symbolic(self, text: str) -> str:
        """``text`` with the root, the checkout and the interpreter written symbolically."""
        if text == sys.executable:
            return _PYTHON
        root = str(self.root.resolve())
        return text.replace(root, _ROOT).replace(str(REPO), _REPO)

    def _relative(self, path: Path) -> str:
        return self._symbolic(str(Path(path).resolve()))

    def _absolute(self, recorded: str) -> Path:
        return Path(recorded.replace(_ROOT, str(self.root.resolve())).replace(_REPO, str(REPO)))


def _render(arg: Arg, token: Optional[str]) -> str:
    if isinstance(arg, (Out, OutDir)):
        return str(temporary_path(arg.path, token) if token else arg.path)
    return str(arg)


def temporary_path(final: Path, token: str) -> Path:
    final = Path(final)
    return final.parent / f"{TEMP_PREFIX}{token}.{final.name}"


# ----------------------------------------------------------------------------------------
# fingerprints
# ----------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _files_of(path: Path) -> List[Tuple[str, Path]]:
    """(name relative to PATH, file) for a file, or every file under a folder, in order;
    the engine's own records, temporary files and logs excluded (fairseq-preprocess writes a
    timestamped preprocess.log into the data it binarizes: a log is not content)."""
    if path.is_file():
        return [("", path)]
    found = []
    for directory, subdirs, files in os.walk(path):
        subdirs[:] = sorted(d for d in subdirs if d != MANIFEST_DIR and not d.startswith(TEMP_PREFIX))
        for name in sorted(files):
            if not name.startswith(TEMP_PREFIX) and not name.endswith(".log"):
                file = Path(directory) / name
                found.append((str(file.relative_to(path)), file))
    return found


def fingerprint(path: Path, known: Optional[dict] = None) -> Optional[dict]:
    """{relative name: [size, mtime_ns, sha256]} of a file or a folder's files; None if
    absent.  A file whose size and mtime equal ``known``'s keeps its recorded digest, so an
    unchanged input is not read again; a copied one (new mtime) is hashed and compared."""
    path = Path(path)
    if not path.exists():
        return None
    known = known or {}
    result = {}
    for name, file in _files_of(path):
        stat = file.stat()
        recorded = known.get(name)
        if recorded and recorded[0] == stat.st_size and recorded[1] == stat.st_mtime_ns:
            result[name] = recorded
        else:
            result[name] = [stat.st_size, stat.st_mtime_ns, _sha256(file)]
    return result


def same_content(a: Optional[dict], b: Optional[dict]) -> bool:
    if a is None or b is None:
        return a is b
    return {k: (v[0], v[2]) for k, v in a.items()} == {k: (v[0], v[2]) for k, v in b.items()}


# ----------------------------------------------------------------------------------------
# manifests
# ----------------------------------------------------------------------------------------
def read_manifest(step: Step) -> Optional[dict]:
    try:
        record = json.loads(step.manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise StepError(f"{step.manifest_path} is not a readable step manifest ({err}); "
                        "delete it to run the step again") from None
    if not isinstance(record, dict) or record.get("version") != MANIFEST_VERSION:
        raise StepError(f"{step.manifest_path} was written by another version of fairseq-relpos "
                        "(unknown manifest format); delete it to run the step again")
    for key in ("command", "identity"):
        if isinstance(record.get(key), list):
            record[key] = _symbolic_tools(record[key])
    return record


# how the first engine recorded its tools: a script's path, or a subcommand of recipes.tools
_OLD_SCRIPTS = {"{repo}/scripts/lib/corpora.py": "corpora", "{repo}/scripts/lib/tatoeba.py": "tatoeba",
                "{repo}/scripts/lib/toy_corpus.py": "toy-corpus", "{repo}/scripts/lib/filter_pairs.py": "filter-pairs",
                "{repo}/scripts/lib/spm.py": "spm", "{repo}/scripts/lib/binarize.py": "binarize"}


def _symbolic_tools(argv: List[str]) -> List[str]:
    """A recorded command with its tools named as this version names them (``{tool:NAME}``),
    so that the folders the first engine made are still done."""
    out, k = [], 0
    while k < len(argv):
        if k + 1 < len(argv) and argv[k + 1] in _OLD_SCRIPTS:
            out.append(f"{{tool:{_OLD_SCRIPTS[argv[k + 1]]}}}")
            k += 2
        elif argv[k + 1:k + 3] == ["-m", "recipes.tools"] and k + 3 < len(argv):
            out.append(f"{{tool:{argv[k + 3]}}}")
            k += 4
        else:
            out.append(argv[k])
            k += 1
    return out


def write_manifest(step: Step, record: dict) -> None:
    path = step.manifest_path
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}.{path.name}")
    temp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temp, path)


def _now() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def _base_record(step: Step, status: str, inputs: Dict[str, dict]) -> dict:
    return {
        "version": MANIFEST_VERSION,
        "step": step.name,
        "status": status,
        "command": step.recorded_command(),
        "identity": step.recorded_identity(),
        "root": os.path.relpath(step.root.resolve(), step.home.resolve()),
        "inputs": {step._relative(p): fp for p, fp in inputs.items()},
        "outputs": [step._relative(p) for p in step.outputs],
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "job_id": scheduler_job_id(),
    }


def scheduler_job_id() -> Optional[str]:
    """The SLURM job (array task) this process runs in, if any."""
    job = os.environ.get("SLURM_JOB_ID")
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    if job and task and os.environ.get("SLURM_ARRAY_JOB_ID"):
        return f"{os.environ['SLURM_ARRAY_JOB_ID']}_{task}"
    return job


# ----------------------------------------------------------------------------------------
# the state of a step
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class State:
    done: bool
    reason: str = ""  # why it must run
    refusal: Optional[str] = None  # why it must not run (the recipe stops before any work)


def step_state(step: Step, upstream_pending: Sequence[Step] = ()) -> State:
    """Whether ``step`` is done; if not, why; or why it may not run at all."""
    record = read_manifest(step)
    if record is None:
        if step.legacy_done is not None and all(p.exists() for p in step.outputs) and step.legacy_done():
            return State(True, "recognised from an older version's marker")
        return State(False, "not run before")
    same_identity = record.get("identity") == step.recorded_identity()
    if not same_identity:
        refusal = _refusal(step, record)
        if refusal:
            return State(False, refusal=refusal)
    if record.get("status") == "failed":
        return State(False, f"failed before: {record.get('error', '?')}" if same_identity
                     else "failed before with another command")
    if record.get("status") != "done":
        return State(False, "interrupted before" if same_identity else "started before with another command")
    if not same_identity:
        return State(False, "done before with another command")
    for output in step.outputs:
        if not output.exists():
            return State(False, f"{output} is missing")
    if upstream_pending:
        return State(False, f"{upstream_pending[0].description} runs first")
    changed = changed_input(step, record)
    if changed is not None:
        # an in-place step would go on from work done on the old input: a training resumes
        refusal = _refusal(step, record, f"{changed} is not what it ran on") if step.in_place else None
        return State(False, f"{changed} changed", refusal=refusal)
    return State(True)


def changed_input(step: Step, record: dict) -> Optional[Path]:
    """The first input whose content differs from the one ``record`` ran on."""
    for path in step.inputs:
        recorded = record["inputs"].get(step._relative(path))
        if not same_content(fingerprint(path, recorded), recorded):
            return Path(path)
    return None


def _refusal(step: Step, record: dict, change: Optional[str] = None) -> Optional[str]:
    if step.on_change != "refuse":
        return None
    keeps_state = step.keeps_state() if step.keeps_state else any(p.exists() for p in step.outputs)
    if not keeps_state:
        return None  # nothing of the other command is left to protect
    change = change or argv_change(record.get("identity", []), step.recorded_identity())
    return step.refusal.format(home=step.home, title=step.description, manifest=step.manifest_path,
                               change=change)


def argv_change(before: Sequence[str], now: Sequence[str]) -> str:
    """What differs between two argument lists, with the option each change belongs to:
    ``--arch transformer_abs, now transformer_rel``."""
    parts = []
    matcher = difflib.SequenceMatcher(a=list(before), b=list(now), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        option = before[i1 - 1] + " " if i1 and str(before[i1 - 1]).startswith("-") else ""
        was = " ".join(shlex.quote(str(a)) for a in before[i1:i2]) or "(nothing)"
        is_ = " ".join(shlex.quote(str(a)) for a in now[j1:j2]) or "(nothing)"
        parts.append(f"{option}{was}, now {is_}")
    return "; ".join(parts) or "the same arguments in another order"


def record_legacy(step: Step) -> None:
    """Writes the manifest of a step an older version finished (its marker said so)."""
    inputs = {Path(p): fingerprint(p) for p in step.inputs}
    record = _base_record(step, "done", inputs)
    record.update(started=None, ended=_now(), note="recognised from an older version's marker")
    write_manifest(step, record)


# ----------------------------------------------------------------------------------------
# running one step
# ----------------------------------------------------------------------------------------
def clear_temporaries(step: Step) -> None:
    """Removes what an interrupted run of ``step`` left under temporary names."""
    for output in step.outputs:
        for leftover in output.parent.glob(f"{TEMP_PREFIX}*.{output.name}") if output.parent.is_dir() else ():
            _remove(leftover)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _set_parent_death_signal():  # runs in the child, before exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class StepFailed(Exception):
    def __init__(self, step: Step, message: str):
        super().__init__(message)
        self.step = step


class RunningStep:
    """One step's process: started in a session of its own (so that stopping it stops its
    children too), killed when the engine dies (PR_SET_PDEATHSIG), its output appended to
    its log and passed line by line to ``on_line``."""

    def __init__(self, step: Step, on_line: Callable[[Step, str], None], env: Dict[str, str]):
        self.step = step
        self.on_line = on_line
        self.env = env
        self.token = f"{os.getpid()}-{id(self) % 100000}"
        self.process: Optional[subprocess.Popen] = None
        self.stopped = False  # by the engine: interrupted, not failed
        self.seconds = 0.0
        self.published: List[Path] = []  # what OutDir outputs moved into their folders

    def run(self) -> None:
        step = self.step
        clear_temporaries(step)
        self._clear_other_commands_work()
        self._clear_published_before()
        for output in step.outputs:
            output.parent.mkdir(parents=True, exist_ok=True)
        for out in (a for a in step.command if isinstance(a, OutDir)):
            Path(out.path).mkdir(parents=True, exist_ok=True)
            temporary_path(out.path, self.token).mkdir(parents=True)
        inputs = {Path(p): fingerprint(p) for p in step.inputs}
        missing = [str(p) for p, fp in inputs.items() if fp is None]
        if missing and not step.after_failures:
            raise StepFailed(step, f"{step.description}: input {missing[0]} does not exist")
        record = _base_record(step, "running", inputs)
        record.update(started=_now(), ended=None)
        write_manifest(step, record)
        step.log_path.parent.mkdir(parents=True, exist_ok=True)
        tail: List[str] = []
        try:
            with open(step.log_path, "a", encoding="utf-8") as log:
                log.write(f"# {_now()} {' '.join(shlex.quote(a) for a in step.argv())}\n")
                log.flush()
                started = time.monotonic()
                code = self._execute(log, tail)
                self.seconds = time.monotonic() - started
            if code != 0:
                raise StepFailed(step, _failure_text(step, code, tail))
            self._publish()
        except StepFailed as failure:
            if not self.stopped:  # a stopped step stays "running": a re-run says it was interrupted
                record.update(status="failed", ended=_now(), error=str(failure).splitlines()[0][:500])
                write_manifest(step, record)
            self._discard()
            raise
        except BaseException:
            self._discard()
            raise
        record.update(status="done", ended=_now(), published=[step._relative(p) for p in self.published],
                      outputs_fingerprint={step._relative(p): _stat_only(p) for p in step.outputs})
        write_manifest(step, record)

    def _clear_published_before(self) -> None:
        """The files an OutDir step wrote last time go before it runs again, so that a run
        that fails leaves none of them to pass for its own (a stale board); other files in
        the folder stay."""
        record = read_manifest(self.step)
        for recorded in (record or {}).get("published", []):
            path = self.step._absolute(recorded)
            if any(path.parent == Path(out.path) for out in self.step.command if isinstance(out, OutDir)):
                _remove(path)

    def _clear_other_commands_work(self) -> None:
        step = self.step
        record = read_manifest(step)
        if not step.in_place or record is None or (record.get("identity") == step.recorded_identity()
                                                   and changed_input(step, record) is None):
            return  # nothing, or the same command's work on the same inputs, which it goes on from
        for pattern in step.owns:
            for leftover in step.home.glob(pattern):
                _remove(leftover)
        for output in step.in_place_outputs:
            _remove(Path(output))

    def _execute(self, log, tail: List[str]) -> int:
        self.process = subprocess.Popen(
            self.step.argv(self.token), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=self.env, start_new_session=True,
            preexec_fn=_set_parent_death_signal, text=True, encoding="utf-8", errors="replace",
            bufsize=1,
        )
        for line in self.process.stdout:
            log.write(line)
            log.flush()
            line = line.rstrip("\n")
            tail.append(line)
            del tail[:-40]
            self.on_line(self.step, line)
        return self.process.wait()

    def stop(self) -> None:
        self.stopped = True
        if self.process and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _publish(self) -> None:
        """Moves every output from its temporary name to its final one."""
        for arg in self.step.command:
            if isinstance(arg, Out):
                for final in arg.outputs:
                    temp = temporary_path(final, self.token)
                    if not temp.exists():
                        raise StepFailed(self.step, f"{self.step.description}: the command "
                                                    f"succeeded but wrote no {final}")
                    if temp.is_dir() and final.is_dir():
                        shutil.rmtree(final)
                    os.replace(temp, final)
            elif isinstance(arg, OutDir):
                temp = temporary_path(arg.path, self.token)
                for name in sorted(os.listdir(temp)):
                    target = arg.path / name
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    os.replace(temp / name, target)
                    self.published.append(target)
                temp.rmdir()
        missing = [p for p in self.step.in_place_outputs if not Path(p).exists()]
        if missing:
            raise StepFailed(self.step, f"{self.step.description}: the command ended without "
                                        f"writing {missing[0]} (see {self.step.log_path})")

    def _discard(self) -> None:
        """Removes the step's temporary outputs, and what its command named after them (a
        tool's own temporary file beside its output, left when the step was stopped)."""
        for arg in self.step.command:
            if isinstance(arg, Out):
                finals = [Path(arg.path), *arg.outputs]
            elif isinstance(arg, OutDir):
                finals = [Path(arg.path)]
            else:
                continue
            for final in finals:
                temporary = temporary_path(final, self.token)
                for leftover in temporary.parent.glob(glob.escape(temporary.name) + "*"):
                    _remove(leftover)


def _stat_only(path: Path) -> Optional[list]:
    try:
        stat = Path(path).stat()
    except FileNotFoundError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def _failure_text(step: Step, code: int, tail: Sequence[str]) -> str:
    errors = [line for line in tail if "error" in line.lower()]
    last = (errors or [line for line in tail if line.strip()] or ["(no output)"])[-1].strip()
    return f"{step.description} failed (exit {code}): {last}"


# ----------------------------------------------------------------------------------------
# graphs
# ----------------------------------------------------------------------------------------
def check_graph(steps: Sequence[Step]) -> Dict[Step, List[Step]]:
    """Each step's upstream steps (those writing a path it reads), after checking that no
    path is written twice, no manifest is shared and there is no cycle."""
    writers: Dict[Path, Step] = {}
    manifests: Dict[Path, Step] = {}
    for step in steps:
        other = manifests.setdefault(step.manifest_path.resolve(), step)
        if other is not step:
            raise ValueError(f"steps {other.name!r} and {step.name!r} share {step.manifest_path}")
        for output in step.outputs:
            other = writers.setdefault(Path(output).resolve(), step)
            if other is not step:
                raise ValueError(f"{output} is an output of both {other.name!r} and {step.name!r}")
    # a step reads what another writes when the paths are equal or one holds the other
    below: Dict[Path, List[Step]] = {}  # a folder -> the steps writing inside it
    for written, writer in writers.items():
        for folder in written.parents:
            below.setdefault(folder, []).append(writer)
    order = {step: index for index, step in enumerate(steps)}
    upstream = {}
    for step in steps:
        found = set()
        for path in (Path(p).resolve() for p in step.inputs):
            found.update(writer for holder in (path, *path.parents) if (writer := writers.get(holder)))
            found.update(below.get(path, ()))
        found.discard(step)
        upstream[step] = sorted(found, key=order.__getitem__)
    _topological(steps, upstream)
    return upstream


def _topological(steps: Sequence[Step], upstream: Dict[Step, List[Step]]) -> List[Step]:
    order, state = [], {}

    def visit(step, chain):
        if state.get(step) == "done":
            return
        if state.get(step) == "visiting":
            raise ValueError("steps depend on each other in a cycle: " +
                             " -> ".join(s.name for s in chain + [step]))
        state[step] = "visiting"
        for parent in upstream[step]:
            visit(parent, chain + [step])
        state[step] = "done"
        order.append(step)

    for step in steps:
        visit(step, [])
    return order


@dataclasses.dataclass
class Outcome:
    ran: List[Step] = dataclasses.field(default_factory=list)
    skipped: List[Step] = dataclasses.field(default_factory=list)
    failed: Dict[Step, str] = dataclasses.field(default_factory=dict)  # step -> error
    blocked: Dict[Step, Step] = dataclasses.field(default_factory=dict)  # step -> failed upstream

    def error_of(self, step: Step) -> Optional[str]:
        if step in self.failed:
            return self.failed[step]
        if step in self.blocked:
            return self.failed[self.blocked[step]]
        return None


def plan(steps: Sequence[Step]) -> List[Tuple[Step, State]]:
    """Every step in the order it would run, with its state; refusals raise ``StepError``
    here, before any work."""
    upstream = check_graph(steps)
    order = _topological(steps, upstream)
    pending: set = set()
    planned = []
    for step in order:
        state = step_state(step, [s for s in upstream[step] if s in pending])
        if state.refusal:
            raise StepError(state.refusal)
        if not state.done:
            pending.add(step)
        planned.append((step, state))
    return planned


def describe(planned: Sequence[Tuple[Step, State]]) -> str:
    """The graph as --dry-run prints it: every step, whether it is done, its command."""
    lines = []
    for step, state in planned:
        mark = "done" if state.done else f"run ({state.reason})"
        lines.append(f"[{mark}] {step.description}")
        argv = ["python" if a == sys.executable else a for a in step.argv()]
        lines.append("    " + " ".join(shlex.quote(a) for a in argv))
    return "\n".join(lines)


class LocalExecutor:
    """Runs steps on this machine, as many at a time as ``threads`` cores and ``gpus``
    allow (a step takes ``cpus`` of the cores, and one GPU of its own when ``gpus`` > 0: the
    least busy one, so that small models share GPUs evenly)."""

    def __init__(self, threads: int = 1, gpus: int = 0, console: Optional[Console] = None):
        if threads < 1:
            raise StepError(f"--threads: expected at least 1, got {threads}")
        self.threads = threads
        self.gpus = gpus
        self.console = console or Console()

    def run(self, steps: Sequence[Step], keep_going: bool = False) -> Outcome:
        """Runs every step that is not done.  A failed step stops the run (its error raised
        as ``StepError``), or with ``keep_going`` only the steps downstream of it."""
        upstream = check_graph(steps)
        outcome = Outcome()
        waiting: List[Step] = []
        for step, state in plan(steps):
            if not state.done:
                waiting.append(step)
                continue
            if state.reason:  # recognised from an older version's marker
                record_legacy(step)
            self.console.log(f"skip  {step.description} (done)")
            outcome.skipped.append(step)
        finished: "queue.Queue[Tuple[RunningStep, Optional[BaseException]]]" = queue.Queue()
        running: Dict[Step, Tuple[RunningStep, threading.Thread, Optional[int]]] = {}
        gpu_load = [0] * self.gpus
        free_cpus = self.threads
        stopping = _install_stop_handlers()

        def failed_upstream(step):
            return next((u for u in upstream[step] if u in outcome.failed or u in outcome.blocked), None)

        def start_ready():
            nonlocal free_cpus
            # trainings first: they are the long steps, and the short ones fill the gaps
            for step in sorted(waiting, key=lambda s: not s.in_place):
                culprit = failed_upstream(step)
                if culprit is not None and not step.after_failures:
                    waiting.remove(step)
                    outcome.blocked[step] = outcome.blocked.get(culprit, culprit)
                    continue
                cpus = min(step.cpus, self.threads)
                if any(u in waiting or u in running for u in upstream[step]) or cpus > free_cpus:
                    continue
                waiting.remove(step)
                state = step_state(step)  # its inputs are final now
                if state.done:
                    self.console.log(f"skip  {step.description} (done: its inputs came out the same)")
                    outcome.skipped.append(step)
                    continue
                gpu = None
                if step.gpus and self.gpus:
                    gpu = min(range(self.gpus), key=lambda g: gpu_load[g])
                    gpu_load[gpu] += 1
                free_cpus -= cpus
                runner = RunningStep(step, self.console.step_line, self._env(step, gpu))
                self.console.log(f"start {step.description} ({state.reason})")
                self.console.step_started(step)
                thread = threading.Thread(target=_run_and_report, args=(runner, finished), daemon=True)
                running[step] = (runner, thread, gpu)
                thread.start()

        try:
            while True:
                start_ready()
                if not running:
                    break
                runner, error = _next_finished(finished, stopping)
                step = runner.step
                _, thread, gpu = running.pop(step)
                thread.join()
                free_cpus += min(step.cpus, self.threads)
                if gpu is not None:
                    gpu_load[gpu] -= 1
                self.console.step_ended(step)
                if error is None:
                    self.console.log(f"done  {step.description} ({runner.seconds:.0f} s)")
                    outcome.ran.append(step)
                elif isinstance(error, StepFailed):
                    outcome.failed[step] = str(error)
                    self.console.step_failed(step, str(error))
                    if not keep_going:
                        raise StepError(str(error))
                else:
                    raise error
        except BaseException:
            _stop_all([(runner, thread) for runner, thread, _ in running.values()])
            raise
        finally:
            _restore_stop_handlers(stopping)
        if waiting:
            raise StepError("internal: steps wait for nothing that runs: " + ", ".join(s.name for s in waiting))
        return outcome

    def _env(self, step: Step, gpu: Optional[int]) -> Dict[str, str]:
        env = {**os.environ, **step.env}
        if gpu is not None:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            ids = visible.split(",") if visible else [str(g) for g in range(self.gpus)]
            env["CUDA_VISIBLE_DEVICES"] = ids[gpu % len(ids)]
        return env


def _run_and_report(runner: RunningStep, finished) -> None:
    try:
        runner.run()
        finished.put((runner, None))
    except BaseException as error:  # handed to the main thread
        finished.put((runner, error))


def _stop_all(running: Sequence[Tuple[RunningStep, threading.Thread]]) -> None:
    """SIGTERM to every running step's process group, then SIGKILL to what is left after 10 s."""
    for runner, _ in running:
        runner.stop()
    deadline = time.monotonic() + 10
    for runner, thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
        runner.kill()
        thread.join(1)


def _next_finished(finished, stopping):
    while True:
        try:
            return finished.get(timeout=0.2)
        except queue.Empty:
            if stopping.is_set():
                raise KeyboardInterrupt


class _StopFlag(threading.Event):
    previous: dict


def _install_stop_handlers() -> _StopFlag:
    """SIGTERM and SIGHUP stop a run as Ctrl-C does: every running step is stopped."""
    flag = _StopFlag()
    flag.previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            flag.previous[signum] = signal.signal(signum, lambda *_: flag.set())
    return flag


def _restore_stop_handlers(flag: _StopFlag) -> None:
    for signum, handler in flag.previous.items():
        signal.signal(signum, handler)


# ----------------------------------------------------------------------------------------
# one run at a time per folder
# ----------------------------------------------------------------------------------------
class FolderLock:
    """An exclusive lock on folders for the length of a run: a second run on one of them is
    refused, naming the run that holds it.  The lock dies with its process.  ``shared``
    locks (the SLURM jobs of one recipe, side by side) exclude only exclusive ones.  A file
    system without locks (some network file systems) is used without, with a warning."""

    def __init__(self, folders: Iterable[Path], what: str, shared: bool = False):
        self.folders = sorted({Path(f).resolve() for f in folders})
        self.what = what
        self.shared = shared
        self._files = []

    def __enter__(self):
        for folder in self.folders:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / MANIFEST_DIR).mkdir(exist_ok=True)
            handle = open(folder / MANIFEST_DIR / "lock", "a+", encoding="utf-8")
            try:
                fcntl.flock(handle, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                self.__exit__()
                raise StepError(f"{folder} is in use by another run ({holder}); wait for it to "
                                "end or stop it, or use another folder") from None
            except OSError as err:
                print(f"warning: cannot lock {folder} ({err}): nothing stops a second run on it", file=sys.stderr)
            if not self.shared:
                handle.seek(0)
                handle.truncate()
                handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {_now()}: {self.what}\n")
                handle.flush()
            self._files.append(handle)
        return self

    def __exit__(self, *exc):
        for handle in self._files:
            handle.close()
        self._files = []


def merged(*groups: Iterable[Step]) -> List[Step]:
    """The steps of several graphs as one: a step that two of them declare (the same manifest,
    command and outputs: a test set two recipes both need) is kept once."""
    kept: Dict[Path, Step] = {}
    for step in (s for group in groups for s in group):
        key = step.manifest_path.resolve()
        other = kept.setdefault(key, step)
        if other is not step and (other.recorded_identity() != step.recorded_identity()
                                  or other.outputs != step.outputs):
            raise ValueError(f"two different steps {step.name!r} share {step.manifest_path}")
    return list(kept.values())
