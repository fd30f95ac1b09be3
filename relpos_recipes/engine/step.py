"""A step: a command (an argument list) with the files and folders it reads (``inputs``) and
writes (its outputs), and how the engine is to treat it.

Steps depend on each other through their paths: a step that reads what another writes runs
after it.  A command names its outputs as :class:`Out` (a file or folder it writes) or
:class:`OutDir` (a folder it writes files into); the engine renders them as hidden temporary
paths beside the final ones and moves them into place when the command succeeded.  A step
that must keep partial work (a training that resumes from its last checkpoint) writes
``in_place_outputs`` where they are, and only its manifest says it finished.

What a step is splits into four records: what identifies its work (the command, or an
explicit ``identity``), its :class:`Policy` (what to do with the work of another command),
its :class:`Resources` and its :class:`Display`.  Paths in its records are written relative
to its ``root`` (a folder that moves as a unit), the checkout and the interpreter
symbolically, so a moved or copied folder, or another clone, is still done.
"""
import dataclasses
import sys
from pathlib import Path
from typing import Callable, List, Mapping, Optional, Pattern, Sequence, Tuple, Union

REPO = Path(__file__).resolve().parents[2]
MANIFEST_DIR = ".steps"
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

REFUSAL = ("{home} holds the work of another command ({title}: {change}); use another folder, or move its "
           "outputs away and delete {manifest} to go on with this one")


@dataclasses.dataclass(frozen=True)
class Policy:
    """What the engine does when a step's manifest records another command or other inputs."""

    # "redo": the step runs afresh (an in-place step's earlier work removed first); "refuse": the
    # recipe stops before any work, saying what differs; "go_on": an in-place step runs on from
    # what the other command left (a training resumes with new settings, asked for by name)
    on_change: str = "redo"
    # the refusal, formatted with {home}, {title}, {manifest} and {change} (what differs)
    refusal: str = REFUSAL
    # in-place steps: whether the leftovers of an earlier command are worth refusing over (a
    # training's checkpoints); None: any in-place output
    keeps_state: Optional[Callable[[], bool]] = None
    # in-place steps: the names (regular expressions, matched whole, in HOME) of the files the
    # step's command makes, removed before it starts afresh; files of other names stay
    owns: Tuple[str, ...] = ()
    # runs even when a step it reads from failed, on the inputs that exist (a choice among
    # the trainings that finished)
    after_failures: bool = False

    def __post_init__(self):
        if self.on_change not in ("redo", "refuse", "go_on"):
            raise ValueError(f"on_change: redo, refuse or go_on, got {self.on_change!r}")


@dataclasses.dataclass(frozen=True)
class Resources:
    cpus: int = 1
    gpus: int = 0  # a step asking for one gets one GPU of its own (the least busy)
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ProgressFormat:
    """How a step's output says how far it got, for the console's progress line (a training's,
    a translation's): patterns whose first group is the updates made so far, the training loss
    and the dev loss in an output line, and the updates it makes in all in its command."""

    updates: Pattern[str]
    loss: Pattern[str]
    dev_loss: Pattern[str]
    max_updates: Pattern[str]


@dataclasses.dataclass(frozen=True)
class Display:
    label: str = ""  # prefixes its output lines on the console; a progress line's name
    echo: bool = True  # whether its output lines go to the console (always to its log)
    title: str = ""  # what the console calls it (default: its name)
    log: Optional[Path] = None  # its output; default HOME/.steps/NAME.log (appended)
    progress: Optional[ProgressFormat] = None  # how its output says how far it got (None: it does not)


@dataclasses.dataclass(frozen=True, eq=False)
class Step:
    name: str  # unique in its home; the manifest's file name
    command: Sequence[Arg]
    home: Path  # its manifest lives in HOME/.steps/
    inputs: Sequence[Path] = ()
    in_place_outputs: Sequence[Path] = ()  # written where they are (see the module docstring)
    root: Optional[Path] = None  # paths under it are recorded relative to it (default: home)
    identity: Optional[Sequence[str]] = None  # what must match instead of the command
    identity_extra: Sequence[str] = ()  # what must match besides (a checksum of the data)
    policy: Policy = Policy()
    resources: Resources = Resources()
    display: Display = Display()

    def __post_init__(self):
        set_ = object.__setattr__  # frozen: the paths are normalised once, here
        set_(self, "home", Path(self.home))
        set_(self, "root", Path(self.root) if self.root is not None else self.home)
        set_(self, "command", tuple(self.command))
        set_(self, "inputs", tuple(Path(p) for p in self.inputs))
        set_(self, "in_place_outputs", tuple(Path(p) for p in self.in_place_outputs))

    # --- paths ------------------------------------------------------------------------
    @property
    def manifest_path(self) -> Path:
        return self.home / MANIFEST_DIR / f"{self.name}.json"

    @property
    def manifest_key(self) -> Path:
        """The manifest's path with its folder resolved (whatever the file itself is)."""
        return self.home.resolve() / MANIFEST_DIR / f"{self.name}.json"

    @property
    def log_path(self) -> Path:
        return self.display.log or self.home / MANIFEST_DIR / f"{self.name}.log"

    @property
    def outputs(self) -> List[Path]:
        declared = []
        for arg in self.command:
            if isinstance(arg, Out):
                declared += arg.outputs
            elif isinstance(arg, OutDir):
                declared.append(Path(arg.path))
        return declared + list(self.in_place_outputs)

    @property
    def out_dirs(self) -> List[Path]:
        return [Path(arg.path) for arg in self.command if isinstance(arg, OutDir)]

    @property
    def description(self) -> str:
        return self.display.title or self.name

    @property
    def in_place(self) -> bool:
        return bool(self.in_place_outputs)

    def argv(self, token: Optional[str] = None) -> List[str]:
        """The command to run: outputs at their temporary names for ``token`` (None: final)."""
        return [part for arg in self.command for part in (arg.argv if isinstance(arg, Tool) else [_render(arg, token)])]

    def recorded_command(self) -> List[str]:
        return [f"{{tool:{arg.name}}}" if isinstance(arg, Tool) else self.symbolic(_render(arg, None))
                for arg in self.command]

    def recorded_identity(self) -> List[str]:
        base = [self.symbolic(str(x)) for x in self.identity] if self.identity is not None \
            else self.recorded_command()
        return base + [str(x) for x in self.identity_extra]

    def symbolic(self, text: str) -> str:
        """``text`` with the root (as given and resolved: a root reached through a symbolic
        link is the same root), the checkout and the interpreter written symbolically."""
        if text == sys.executable:
            return _PYTHON
        for root in sorted({str(self.root.absolute()), str(self.root.resolve())}, key=len, reverse=True):
            text = text.replace(root, _ROOT)
        return text.replace(str(REPO), _REPO)

    def relative(self, path: Path) -> str:
        return self.symbolic(str(Path(path).resolve()))

    def absolute(self, recorded: str) -> Path:
        return Path(recorded.replace(_ROOT, str(self.root.resolve())).replace(_REPO, str(REPO)))


def _render(arg: Arg, token: Optional[str]) -> str:
    if isinstance(arg, (Out, OutDir)):
        return str(temporary_path(arg.path, token) if token else arg.path)
    return str(arg)


def temporary_path(final: Path, token: str) -> Path:
    """Where a step's output lives until the step succeeded: the one temporary-name
    convention of the engine and its tools (``.tmp.TOKEN.NAME`` beside NAME)."""
    final = Path(final)
    return final.parent / f"{TEMP_PREFIX}{token}.{final.name}"
