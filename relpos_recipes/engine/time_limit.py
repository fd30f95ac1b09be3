"""SLURM's warning that a job's time limit is near (``--signal=B:USR1@MARGIN``), heard from the
start of a job's process: the warning may come before the runner is running, and SIGUSR1's
default action would end the process, losing the chance to requeue."""
import signal
import threading

near = threading.Event()


def listen() -> None:
    signal.signal(signal.SIGUSR1, lambda *_: near.set())
