"""On-disk cache of sentence statistics, so that a report recomputes only what changed.

An entry is one system's statistics for one metric: a sentences x statistics array in
numpy's .npy format, named by a hash of everything the numbers depend on: the metric's
sacrebleu signature (metric, options, number of references, sacrebleu's version), the
references' and the hypotheses' text, and ``FORMAT`` below.  Editing a file, changing an
option or upgrading sacrebleu therefore gives a new name; nothing is ever invalidated in
place.  Entries are written under a temporary name and renamed, so concurrent reports
and interrupted ones leave only whole files.
"""
import hashlib
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .io import InputError

# Bump when the statistics computed for the same signature and text change.
FORMAT = "relpos-statistics-1"


def default_directory() -> Path:
    """$RELPOS_CACHE_DIR, else fairseq-relpos/statistics in $XDG_CACHE_HOME or ~/.cache."""
    if os.environ.get("RELPOS_CACHE_DIR"):
        return Path(os.environ["RELPOS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fairseq-relpos" / "statistics"


class StatisticsCache:
    def __init__(self, directory) -> None:
        self.directory = Path(directory)

    def key(self, signature: str, references: Sequence[Sequence[str]], hypotheses: Sequence[str]) -> str:
        digest = hashlib.sha256()
        for part in (FORMAT, signature):
            digest.update(part.encode("utf-8") + b"\0")
        for stream in list(references) + [hypotheses]:
            # lines never contain "\n", so it separates them unambiguously
            digest.update(f"{len(stream)}\0".encode("utf-8"))
            for line in stream:
                digest.update(line.encode("utf-8") + b"\n")
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.npy"

    def load(self, key: str, n_sentences: int) -> Optional[np.ndarray]:
        """The cached statistics, or None when absent or unreadable (then recomputed)."""
        try:
            stats = np.load(self._path(key), allow_pickle=False)
        except (OSError, ValueError):
            return None
        return stats if stats.ndim == 2 and len(stats) == n_sentences else None

    def create(self) -> None:
        """Makes the folder: a cache that cannot be written fails before any work."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise self._error(err) from None

    def save(self, key: str, stats: np.ndarray) -> None:
        path = self._path(key)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(temporary, "wb") as out:
                np.save(out, stats, allow_pickle=False)
            os.replace(temporary, path)
        except OSError as err:
            temporary.unlink(missing_ok=True)
            raise self._error(err) from None

    def _error(self, err: OSError) -> InputError:
        return InputError(
            f"cannot write the statistics cache {self.directory}: {err.strerror or err}; "
            "choose another folder with --cache-dir or pass --no-cache"
        )
