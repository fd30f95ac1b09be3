"""SLURM's warning that a job's time limit is near (``--signal=B:USR1@MARGIN``), heard from the
start of a job's process: the warning may come before the runner is running, and SIGUSR1's
default action would end the process, losing the chance to requeue.  SLURM sends it once, and
has sent it to a requeued job 0.2 s after its start, before any Python could hear it: the job's
script ignores it until then (``trap '' USR1``), and ``watch`` sets a timer from the time SLURM
says the job has left, so that the warning is neither fatal nor lost."""
import signal
import threading
from typing import Optional

near = threading.Event()


def listen() -> None:
    signal.signal(signal.SIGUSR1, lambda *_: near.set())


def watch(seconds_left: Optional[float], margin: int) -> Optional[threading.Timer]:
    """The time limit is near ``margin`` seconds before the job's end, ``seconds_left`` from
    now (None: SLURM did not say, the signal alone tells); the timer that will say so."""
    if seconds_left is None:
        return None
    if seconds_left <= margin:
        near.set()
        return None
    timer = threading.Timer(seconds_left - margin, near.set)
    timer.daemon = True
    timer.start()
    return timer
