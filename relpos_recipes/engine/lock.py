"""One run at a time per folder, nested folders included.

A run locks its folders (``FOLDER/.steps/lock``) exclusively, and every folder above them that
a run has locked before, shared: a run inside a folder that another run holds (``train.sh
--save-dir`` inside a running demo) is refused, and so is a run on a folder that holds one
that runs.  The SLURM jobs of one recipe share their recipe's folders.  Locks die with their
process.  A file system without locks (some network file systems) is used without, with a
warning; a read-only folder is used as it is (a run with nothing to do succeeds there).
"""
import errno
import fcntl
import os
import socket
import sys
from pathlib import Path
from typing import Iterable, List

from .manifest import now
from .step import MANIFEST_DIR, StepError

LOCK_NAME = "lock"


class FolderLock:
    def __init__(self, folders: Iterable[Path], what: str, shared: bool = False):
        self.folders = sorted({Path(f).resolve() for f in folders})
        self.what = what
        self.shared = shared
        self._handles: List = []

    def __enter__(self):
        try:
            for folder in self.folders:
                self._lock_above(folder)
                self._lock(folder)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.close()
        self._handles = []

    def _lock_above(self, folder: Path) -> None:
        for above in folder.parents:
            path = above / MANIFEST_DIR / LOCK_NAME
            if above in self.folders or not path.is_file():
                continue
            try:
                handle = open(path, "r", encoding="utf-8")
            except OSError:
                continue
            if not self._try(handle, fcntl.LOCK_SH):
                holder = handle.read().strip() or "another process"
                handle.close()
                raise StepError(f"{folder} is inside {above}, which is in use by another run ({holder}); wait for "
                                "it to end or stop it, or use a folder outside it")
            self._handles.append(handle)

    def _lock(self, folder: Path) -> None:
        path = folder / MANIFEST_DIR / LOCK_NAME
        if folder.exists() and not folder.is_dir():
            raise StepError(f"{folder} is a file, not a folder")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(path, "a+", encoding="utf-8")
        except IsADirectoryError:
            raise StepError(f"{path} is a folder, not the run's lock file; delete it") from None
        except OSError as err:
            if err.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise StepError(f"cannot lock {folder}: {err.strerror or err}") from None
            # a read-only folder: nothing can be written there, and so no other run can either
            if not path.is_file():
                return
            handle = open(path, "r", encoding="utf-8")
        if not self._try(handle, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX):
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise StepError(f"{folder} is in use by another run ({holder}); wait for it to end or stop it, "
                            "or use another folder")
        if not self.shared and handle.mode != "r":
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {now()}: {self.what}\n")
            handle.flush()
        self._handles.append(handle)

    @staticmethod
    def _try(handle, mode: int) -> bool:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as err:
            print(f"warning: cannot lock {handle.name} ({err}): nothing stops a second run on it", file=sys.stderr)
        return True
