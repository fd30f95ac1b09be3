"""Folders made by the bash recipes (before the step engine) are recognised, not redone: each
function answers whether an older version's marker says a step is done with the same
settings.  The engine then writes the step's manifest, and the marker is not read again."""
import shlex
from pathlib import Path
from typing import Sequence

from ..engine.core import StepError


def _newer(a: Path, b: Path) -> bool:
    return a.exists() and b.exists() and a.stat().st_mtime > b.stat().st_mtime


def is_old_preparation(work: Path) -> bool:
    return (work / ".lock").exists() or (work / "config.env").exists()


def check_preparation(work: Path, config: str) -> None:
    """An older version's preparation with other settings is refused, as it was then."""
    recorded = work / "config.env"
    built = [p for p in (work / ".done").glob("*") if not p.name.startswith("orig")] if (work / ".done").is_dir() else []
    if recorded.exists() and built and recorded.read_text(encoding="utf-8") != config:
        raise StepError(f"{work} was prepared with other settings (by an older version: {recorded} says "
                        f"{' / '.join(recorded.read_text(encoding='utf-8').split())}); use another --work-dir or delete it")


def prepared(work: Path, config: str, stamp: str) -> bool:
    recorded = work / "config.env"
    return (recorded.exists() and recorded.read_text(encoding="utf-8") == config
            and (work / ".done" / stamp).exists())


def testset_built(folder: Path) -> bool:
    work = folder.parent.parent
    return (folder / ".done").exists() and not _newer(work / ".done" / "dict", folder / ".done")


def _recorded(path: Path, key: str) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(key + "="):
            return line[len(key) + 1:]
    return ""


def trained(save: Path, settings: Sequence[str]) -> bool:
    """train.sh recorded its settings (printf %q) in train.env and wrote train.done at the end."""
    env = save / "train.env"
    return ((save / "train.done").exists() and env.exists()
            and shlex.split(_recorded(env, "SETTINGS")) == [str(s) for s in settings])


def translated(out: Path, command: Sequence[str], checkpoint: Path, testset: Path) -> bool:
    """translate.sh recorded its fairseq-generate command in translate.done."""
    done = out / "translate.done"
    return (done.exists() and shlex.split(done.read_text(encoding="utf-8")) == [str(c) for c in command]
            and not _newer(checkpoint, done) and not _newer(testset / ".done", done))


def demo_settings(folder: Path, settings: str) -> bool:
    """demo.sh recorded each system's settings in demo.settings."""
    recorded = folder / "demo.settings"
    return recorded.exists() and recorded.read_text(encoding="utf-8").strip() == settings
