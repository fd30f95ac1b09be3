"""The process every step's command runs under: ``python guard.py ENGINE_PID LOCK_FD -- COMMAND ...``.

It makes the command die with the engine, however the engine dies (``kill -9`` included): the
kernel sends the guard SIGTERM when the engine's thread that started it ends
(PR_SET_PDEATHSIG, set here, in a process of one thread, rather than between fork and exec in
the engine's threads), and the guard passes any SIGTERM, SIGINT or SIGHUP on to the whole
process group of the step (the tool, fairseq-train, its data workers), then kills what is left
after a grace period.  Run as a file, not a module, and without the site (``python -S``): it
starts in milliseconds.

LOCK_FD, the step's lock the engine holds (or ``-``), is passed on to the command, so the
step's lock is held as long as any process of the step lives.
"""
import ctypes
import os
import signal
import subprocess
import sys

GRACE_SECONDS = 10
PR_SET_PDEATHSIG = 1


def main(argv) -> int:
    engine_pid, lock_fd, separator, *command = argv
    if separator != "--" or not command:
        print("usage: guard.py ENGINE_PID LOCK_FD -- COMMAND ...", file=sys.stderr)
        return 2
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the engine's own stop still reaches the group
        pass
    if os.getppid() != int(engine_pid):  # the engine died before the line above
        return 143
    stopping = False

    def stop(_signum, _frame):
        nonlocal stopping
        if stopping:
            return
        stopping = True
        for each in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(each, signal.SIG_IGN)
        os.killpg(os.getpgrp(), signal.SIGTERM)
        # what has not ended after the grace period is killed, the guard included
        signal.signal(signal.SIGALRM, lambda *_: os.killpg(os.getpgrp(), signal.SIGKILL))
        signal.alarm(GRACE_SECONDS)

    for each in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(each, stop)
    try:
        child = subprocess.Popen(command, pass_fds=[] if lock_fd == "-" else [int(lock_fd)])
    except OSError as err:
        print(f"error: cannot run {command[0]}: {err.strerror or err}", file=sys.stderr)
        return 127
    code = child.wait()
    if stopping:  # the command ended; whatever it left of the step goes with the guard
        os.killpg(os.getpgrp(), signal.SIGKILL)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
