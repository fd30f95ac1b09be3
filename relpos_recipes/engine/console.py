"""What a run shows: the engine's own lines and its steps' output.

``Console`` streams every output line of a step, prefixed with its label (what train.sh and
the table recipes show).  ``ProgressConsole`` shows one progress line per running system
instead (updates, loss, dev loss, time left), redrawn in place on a terminal and printed
every half minute otherwise; the full output is in each step's log, and a failing step's
last lines are printed (the demo, the leaderboard and the Tatoeba recipe).
"""
import sys
import threading
import time
from typing import Dict, Optional

from relpos_analysis import fairseq_log


class Console:
    """Where the engine reports: its own lines (timestamped, on stderr) and each step's
    output lines (prefixed with the step's label, on stdout)."""

    def __init__(self, stream_steps: bool = True):
        self.stream_steps = stream_steps
        self._lock = threading.Lock()

    def log(self, message: str) -> None:
        with self._lock:
            print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    def step_line(self, step, line: str) -> None:
        if self.stream_steps and step.display.echo:
            with self._lock:
                print(f"[{step.display.label}] {line}" if step.display.label else line, flush=True)

    def plan_started(self, planned) -> None:
        pass

    def step_skipped(self, step, why: str) -> None:
        self.log(f"skip  {step.description} ({why})")

    def step_started(self, step, reason: str) -> None:
        self.log(f"start {step.description} ({reason})")

    def step_done(self, step, seconds: float) -> None:
        self.log(f"done  {step.description} ({seconds:.0f} s)")

    def replanned(self, job, steps) -> None:
        self.log(f"planned {job.later.title}: {len(steps)} step(s)")

    def step_failed(self, step, error: str) -> None:
        self.log(f"FAILED {step.description}: {error.splitlines()[0]}")
        try:
            tail = step.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        except OSError:
            tail = []
        if tail:
            with self._lock:
                for line in tail:
                    print(f"  {line}", file=sys.stderr)
                print(f"  (the whole log: {step.log_path})", file=sys.stderr, flush=True)





class _Progress:
    def __init__(self, step):
        self.step = step
        self.started = time.monotonic()
        self.first: Optional[tuple] = None  # (time, updates) of the first progress line
        self.updates = 0
        self.loss: Optional[str] = None
        self.dev_loss: Optional[str] = None
        cap = fairseq_log.MAX_UPDATE.findall(" ".join(step.argv()))
        self.max_updates = int(cap[-1]) if cap else None
        self.printed = 0.0

    def read(self, line: str) -> bool:
        """Takes one output line; whether it was a dev evaluation (worth showing at once)."""
        updates = fairseq_log.UPDATES.search(line)
        if updates:
            self.updates = int(updates.group(1))
            if self.first is None:
                self.first = (time.monotonic(), self.updates)
        loss = fairseq_log.TRAIN_LOSS.search(line)
        if loss:
            self.loss = loss.group(1)
        dev = fairseq_log.DEV_LOSS.search(line)
        if dev:
            self.dev_loss = dev.group(1)
        return bool(dev)

    def text(self) -> str:
        elapsed = time.monotonic() - self.started
        parts = [self.step.description.split(" ")[0]]
        if self.updates or self.max_updates:
            parts[0] += f" {self.updates}" + (f"/{self.max_updates}" if self.max_updates else "") + " updates"
        if self.loss:
            parts.append(f"loss {self.loss}")
        if self.dev_loss:
            parts.append(f"dev loss {self.dev_loss}")
        left = self._seconds_left()
        parts.append(f"{_clock(elapsed)} so far" + (f", about {_clock(left)} left" if left is not None else ""))
        return f"[{self.step.display.label}] " + " · ".join(parts)

    def _seconds_left(self) -> Optional[float]:
        if not self.max_updates or self.first is None or self.updates <= self.first[1]:
            return None
        rate = (self.updates - self.first[1]) / (time.monotonic() - self.first[0])
        return max(0.0, (self.max_updates - self.updates) / rate)


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class ProgressConsole(Console):
    """One progress line per running step with a label, instead of its output."""

    def __init__(self, stream=None, interval: float = 30.0):
        super().__init__(stream_steps=False)
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.interval = interval
        self.running: Dict[object, _Progress] = {}
        self._drawn = 0  # lines of the live block on the terminal

    def log(self, message: str) -> None:
        with self._lock:
            self._clear()
            print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
            self._draw()

    def step_started(self, step, reason: str) -> None:
        super().step_started(step, reason)
        if step.display.label and step.display.echo:
            with self._lock:
                self.running[step] = _Progress(step)

    def step_done(self, step, seconds: float) -> None:
        self._ended(step)
        super().step_done(step, seconds)

    def step_failed(self, step, error: str) -> None:
        self._ended(step)
        super().step_failed(step, error)

    def _ended(self, step) -> None:
        with self._lock:
            progress = self.running.pop(step, None)
            if progress is not None and not self.live:
                print(progress.text(), file=self.stream, flush=True)

    def step_line(self, step, line: str) -> None:
        progress = self.running.get(step)
        if progress is None:
            return
        with self._lock:
            evaluated = progress.read(line)
            now = time.monotonic()
            if self.live:
                if now - progress.printed > 0.5 or evaluated:
                    progress.printed = now
                    self._clear()
                    self._draw()
            elif evaluated or now - progress.printed > self.interval:
                progress.printed = now
                print(progress.text(), file=self.stream, flush=True)

    def _clear(self) -> None:
        if self.live and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _draw(self) -> None:
        if self.live and self.running:
            lines = [progress.text() for progress in self.running.values()]
            self.stream.write("\n".join(lines) + "\n")
            self.stream.flush()
            self._drawn = len(lines)
