"""A step's manifest, ``HOME/.steps/NAME.json``: what ran (the command, its identity), on
what (a fingerprint of every input), what it wrote (a fingerprint of every output), when, where
(host, process, SLURM job) and how it ended.  :class:`Record` is the one way to read and write
one: a manifest that cannot be read as one, for whatever reason, is refused by name.

A fingerprint is ``{relative name: [size, mtime_ns, sha256]}`` of a file or a folder's files.
"""
import dataclasses
import datetime as _dt
import errno
import hashlib
import json
import os
import socket
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from .slurm_queue import ENDED_BY_SLURM, show_job
from .step import MANIFEST_DIR, TEMP_PREFIX, Step, StepError

VERSION = 2
# the first engine's format: outputs a list, without fingerprints; tools recorded by path
_FIRST_VERSION = 1
STATUSES = ("running", "done", "failed")

Fingerprint = Dict[str, list]


# ----------------------------------------------------------------------------------------
# fingerprints
# ----------------------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_of(path: Path) -> List[tuple]:
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


def fingerprint(path: Path, known: Optional[Fingerprint] = None,
                only: Optional[Iterable[str]] = None) -> Optional[Fingerprint]:
    """The fingerprint of a file or folder; None if absent.  A file whose size and mtime equal
    ``known``'s keeps its recorded digest, so an unchanged file is not read again (a copied
    one, with a new mtime, is hashed and compared).  ``only``: the names a folder's producing
    step wrote, so that files a user put beside them (notes) are no part of it."""
    path = Path(path)
    if not path.exists():
        return None
    known = known or {}
    wanted = None if only is None else set(only)
    result = {}
    for name, file in files_of(path):
        if wanted is not None and name not in wanted:
            continue
        stat = file.stat()
        recorded = known.get(name)
        if recorded and recorded[0] == stat.st_size and recorded[1] == stat.st_mtime_ns:
            result[name] = recorded
        else:
            result[name] = [stat.st_size, stat.st_mtime_ns, _sha256(file)]
    return result


def same_content(a: Optional[Fingerprint], b: Optional[Fingerprint]) -> bool:
    if a is None or b is None:
        return a is b
    return {k: (v[0], v[2]) for k, v in a.items()} == {k: (v[0], v[2]) for k, v in b.items()}


# ----------------------------------------------------------------------------------------
# the record
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Record:
    step: str
    status: str  # running | done | failed
    command: List[str]
    identity: List[str]
    root: str
    inputs: Dict[str, Optional[Fingerprint]]
    # each output's fingerprint when the step ended (None: not known, a first-engine record)
    outputs: Dict[str, Optional[Fingerprint]]
    host: str = ""
    pid: Optional[int] = None
    job_id: Optional[str] = None
    started: Optional[str] = None
    ended: Optional[str] = None
    error: Optional[str] = None
    published: List[str] = dataclasses.field(default_factory=list)  # files its OutDirs received
    requeues: int = 0  # times a SLURM job requeued it at its time limit
    version: int = VERSION

    @classmethod
    def start(cls, step: Step, inputs: Dict[Path, Optional[Fingerprint]]) -> "Record":
        return cls(step=step.name, status="running", command=step.recorded_command(),
                   identity=step.recorded_identity(),
                   root=os.path.relpath(step.root.resolve(), step.home.resolve()),
                   inputs={step.relative(p): fp for p, fp in inputs.items()},
                   outputs={step.relative(p): None for p in step.outputs}, host=socket.gethostname(),
                   pid=os.getpid(), job_id=scheduler_job_id(), started=now())

    def input_fingerprint(self, step: Step, path: Path) -> Optional[Fingerprint]:
        return self.inputs.get(step.relative(path))

    def output_fingerprint(self, step: Step, path: Path) -> Optional[Fingerprint]:
        return self.outputs.get(step.relative(path))

    def option(self, name: str, of: Optional[List[str]] = None) -> Optional[str]:
        """The value the recorded command (or ``of``: its identity) gives option ``name``
        (its last one)."""
        argv = self.command if of is None else of
        value = None
        for k, arg in enumerate(argv):
            if arg == name and k + 1 < len(argv):
                value = argv[k + 1]
        return value

    def absolute(self, home: Path, recorded: str) -> Path:
        """A path this record, the manifest of a step in ``home``, writes symbolically."""
        return Step(self.step, (), home=home, root=Path(home) / self.root).absolute(recorded)


def read(path: Path) -> Optional[Record]:
    """The manifest at ``path``, None where there is none; one that cannot be read as a
    manifest (not JSON, cut short, a folder, a link to nowhere, fields missing or of another
    type, another version's format) is refused, naming it and what to do."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return _record(raw)
    except (OSError, ValueError, TypeError, KeyError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err) or type(err).__name__
        raise StepError(f"{path} is not a readable step manifest ({why}); delete it to run the step "
                        "again") from None


def _record(raw) -> Record:
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    version = raw.get("version")
    if version not in (_FIRST_VERSION, VERSION):
        raise ValueError(f"written by another version of fairseq-relpos: format {version!r}")
    fields = {f.name: f for f in dataclasses.fields(Record)}
    data = {key: value for key, value in raw.items() if key in fields}
    if version == _FIRST_VERSION:
        data["outputs"] = {path: None for path in raw.get("outputs", [])}
        data["command"] = _symbolic_tools(raw.get("command", []))
        data["identity"] = _symbolic_tools(raw.get("identity", []))
        data["version"] = VERSION
    for key in ("step", "status", "command", "identity", "root", "inputs", "outputs"):
        if key not in data:
            raise KeyError(f"no '{key}'")
    if data["status"] not in STATUSES:
        raise ValueError(f"status {data['status']!r}")
    if not (isinstance(data["command"], list) and isinstance(data["identity"], list)
            and isinstance(data["inputs"], dict) and isinstance(data["outputs"], dict)
            and all(isinstance(v, (dict, type(None))) for v in [*data["inputs"].values(), *data["outputs"].values()])):
        raise TypeError("its command, identity, inputs or outputs are of another type")
    return Record(**data)


# how the first engine recorded its tools: a script's path, a subcommand of recipes.tools, or a
# module of the analysis package
_FIRST_ENGINE_MODULES = {"analysis.report": "report", "analysis.leaderboard": "board"}
_FIRST_ENGINE_SCRIPTS = {"{repo}/scripts/lib/corpora.py": "corpora", "{repo}/scripts/lib/tatoeba.py": "tatoeba",
                         "{repo}/scripts/lib/toy_corpus.py": "toy-corpus",
                         "{repo}/scripts/lib/filter_pairs.py": "filter-pairs", "{repo}/scripts/lib/spm.py": "spm",
                         "{repo}/scripts/lib/binarize.py": "binarize"}


def _symbolic_tools(argv: List[str]) -> List[str]:
    """A first-engine command with its tools named as steps name them now (``{tool:NAME}``),
    so that the folders it made are still done."""
    out, k = [], 0
    while k < len(argv):
        if k + 1 < len(argv) and argv[k + 1] in _FIRST_ENGINE_SCRIPTS:
            out.append(f"{{tool:{_FIRST_ENGINE_SCRIPTS[argv[k + 1]]}}}")
            k += 2
        elif argv[k + 1:k + 3] == ["-m", "recipes.tools"] and k + 3 < len(argv):
            out.append(f"{{tool:{argv[k + 3]}}}")
            k += 4
        elif argv[k + 1:k + 2] == ["-m"] and k + 2 < len(argv) and argv[k + 2] in _FIRST_ENGINE_MODULES:
            out.append(f"{{tool:{_FIRST_ENGINE_MODULES[argv[k + 2]]}}}")
            k += 3
        else:
            out.append(argv[k])
            k += 1
    return out


def write(path: Path, record: Record) -> None:
    """Writes the manifest in one piece (a temporary file renamed); a full disk or a
    read-only folder is named, and leaves no temporary file."""
    path = Path(path)
    temp = path.with_name(f"{TEMP_PREFIX}{os.getpid()}.{path.name}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(dataclasses.asdict(record), indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
        os.replace(temp, path)
    except OSError as err:
        try:
            temp.unlink()
        except OSError:
            pass
        raise StepError(disk_error(err, path)) from None


def disk_error(err: OSError, path: Path) -> str:
    """What a failed write says: which folder, and what is wrong with it."""
    folder = Path(path).parent
    if err.errno == errno.ENOSPC:
        return f"no space left on the device of {folder} (writing {Path(path).name}); free some and run again"
    if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"{folder} is read-only ({err.strerror}): the run cannot write {Path(path).name} there"
    return f"cannot write {path}: {err.strerror or err}"


def of(step: Step) -> Optional[Record]:
    """The step's manifest (the one accessor the recipes read manifests through)."""
    return read(step.manifest_path)


def at(home: Path, name: str) -> Optional[Record]:
    """The manifest of step ``name`` in ``home``, for readers without the step itself (a
    translation reading its training's --user-dir, the choice reading a training's status)."""
    return read(Path(home) / MANIFEST_DIR / f"{name}.json")


def scheduler_job_id() -> Optional[str]:
    """The SLURM job (array task) this process runs in, if any."""
    job = os.environ.get("SLURM_JOB_ID")
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    if job and task and os.environ.get("SLURM_ARRAY_JOB_ID"):
        return f"{os.environ['SLURM_ARRAY_JOB_ID']}_{task}"
    return job


def check_manifests(roots: Sequence[Path]) -> None:
    """Reads every step manifest under the run's folders before any work: a damaged one
    stops the run at its start, naming it, not after hours of training."""
    for root in roots:
        for directory, subdirs, _files in os.walk(root):
            if MANIFEST_DIR in subdirs:
                for path in sorted((Path(directory) / MANIFEST_DIR).glob("*.json")):
                    read(path)
            subdirs[:] = [d for d in subdirs if d != MANIFEST_DIR and not d.startswith(".tmp.")]


def unfinished(steps: Sequence[Step]) -> Optional[str]:
    """Why the first of ``steps`` that did not finish did not: SLURM's state where SLURM ended
    the job it ran in, the error its manifest records, or that it did not run to its end;
    None when all finished."""
    for step in steps:
        record = of(step)
        ended = ended_by_slurm(record)
        if ended:
            return f"{step.description}: {ended} (see {step.log_path})"
        if record and record.status == "failed":
            return record.error or "failed"
        if not (record and record.status == "done") or not all(p.exists() for p in step.outputs):
            return f"{step.description} did not finish (see {step.log_path})"
    return None


def ended_by_slurm(record: Optional[Record]) -> Optional[str]:
    """Why a step's unfinished run ended where SLURM ended the job it ran in ("SLURM ended
    its job 70: CANCELLED"): the step's own last words then are only where it was stopped.
    None where SLURM did not, or no SLURM says."""
    if record is None or record.status == "done" or not record.job_id:
        return None
    state = show_job(record.job_id).get("JobState")
    return f"SLURM ended its job {record.job_id}: {state}" if state in ENDED_BY_SLURM else None


def now() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")
