"""On-disk cache of sentence statistics, so that a report recomputes only what changed.

An entry is one system's statistics for one metric: a sentences x statistics array, named
by a hash of everything the numbers depend on: the metric's sacrebleu signature (metric,
options, number of references, sacrebleu's version), the references' and the hypotheses'
text, and ``FORMAT`` below.  Editing a file, changing an option or upgrading sacrebleu
therefore gives a new name; nothing is ever invalidated in place.  An entry is a header
line with the SHA-256 of the rest, then the array in numpy's .npy format; it is used only
when the checksum matches and the array has exactly the expected shape, else recomputed
with a warning.  Entries are written under a temporary name and renamed, so concurrent
reports and interrupted ones leave only whole files.
"""
import hashlib
import io
import os
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from .io import InputError

# Bump when the statistics computed for the same signature and text, or the file layout,
# change.
FORMAT = "relpos-statistics-2"
_HEADER = FORMAT.encode("ascii") + b" sha256 "


def default_directory() -> Path:
    """$RELPOS_CACHE_DIR, else fairseq-relpos/statistics in $XDG_CACHE_HOME or ~/.cache."""
    if os.environ.get("RELPOS_CACHE_DIR"):
        return Path(os.environ["RELPOS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "fairseq-relpos" / "statistics"


def _print_warning(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


class StatisticsCache:
    """``warn`` receives a line for each damaged entry (default: stderr)."""

    def __init__(self, directory, warn: Callable[[str], None] = _print_warning) -> None:
        self.directory = Path(directory)
        self.warn = warn

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
        return self.directory / f"{key}.stats"

    def load(self, key: str, n_sentences: int, width: int) -> Optional[np.ndarray]:
        """The cached n_sentences x width statistics; None when absent or damaged (then
        recomputed, with a warning for a damaged one)."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            return self._damaged(path, f"unreadable ({err.strerror or err})")
        header, _, payload = data.partition(b"\n")
        if not header.startswith(_HEADER):
            return self._damaged(path, "not a statistics entry")
        if header[len(_HEADER):] != hashlib.sha256(payload).hexdigest().encode("ascii"):
            return self._damaged(path, "its checksum does not match its content")
        try:
            stats = np.load(io.BytesIO(payload), allow_pickle=False)
        except (OSError, ValueError) as err:
            return self._damaged(path, f"unreadable ({err})")
        if stats.shape != (n_sentences, width) or stats.dtype != np.float64:
            return self._damaged(path, f"{stats.dtype} statistics of shape {stats.shape}, "
                                       f"expected float64 of shape {(n_sentences, width)}")
        return stats

    def _damaged(self, path: Path, problem: str) -> None:
        self.warn(f"statistics cache entry {path} is damaged: {problem}; computing it again")
        return None

    def create(self) -> None:
        """Makes the folder: a cache that cannot be written fails before any work."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise self._error(err) from None

    def save(self, key: str, stats: np.ndarray) -> None:
        payload = io.BytesIO()
        np.save(payload, np.asarray(stats, dtype=np.float64), allow_pickle=False)
        payload = payload.getvalue()
        header = _HEADER + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n"
        path = self._path(key)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(header + payload)
            os.replace(temporary, path)
        except OSError as err:
            temporary.unlink(missing_ok=True)
            raise self._error(err) from None

    def _error(self, err: OSError) -> InputError:
        return InputError(
            f"cannot write the statistics cache {self.directory}: {err.strerror or err}; "
            "choose another folder with --cache-dir or pass --no-cache"
        )
