"""What a run shows: the engine's own lines and its steps' output.

``Console`` streams every output line of a step, prefixed with its label (what train.sh and
the table recipes show), and a line when each step starts, is skipped or ends.
``ProgressConsole`` (the demo, the leaderboard, the Tatoeba recipe) shows instead how each
phase goes (the data, the systems, the reports) and how long it took, and one progress line
per running training or translation (updates, loss, dev loss, time left).  On a terminal the
data phase is one live line (steps done of all, the one running) and each running system a
line updated in place (tqdm); on a log or a pipe, a line per step and a progress line every
half minute.  Either way a failing step prints its last lines and where its log is; a step's
whole output is in its log.
"""
import sys
import threading
import time
from typing import Dict, Optional

PHASES = {"prepare": "preparing the data and the test sets", "system": "training and translating",
          "report": "the reports"}


class Console:
    """Where the engine reports: its own lines (timestamped, on stderr) and each step's
    output lines (prefixed with the step's label, on stdout)."""

    def __init__(self, stream_steps: bool = True):
        self.stream_steps = stream_steps
        self._lock = threading.RLock()

    def log(self, message: str) -> None:
        with self._lock:
            print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    def step_line(self, step, line: str) -> None:
        if self.stream_steps and step.display.echo:
            with self._lock:
                print(f"[{step.display.label}] {line}" if step.display.label else line, flush=True)

    def plan_started(self, planned) -> None:
        pass

    def replanned(self, job, steps) -> None:
        self.log(f"planned {job.later.title}: {len(steps)} step(s)")

    def step_skipped(self, step, why: str) -> None:
        self.log(f"skip  {step.description} ({why})")

    def step_started(self, step, reason: str) -> None:
        self.log(f"start {step.description} ({reason})")

    def step_done(self, step, seconds: float) -> None:
        self.log(f"done  {step.description} ({seconds:.0f} s)")

    def step_failed(self, step, error: str) -> None:
        self.log(f"FAILED {step.description}: {error.splitlines()[0]}")
        try:
            tail = step.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        except OSError:
            tail = []
        with self._lock:
            for line in tail:
                print(f"  {line}", file=sys.stderr)
            print(f"  (the whole log: {step.log_path})", file=sys.stderr, flush=True)


class _Progress:
    """What a training's or translation's output says so far."""

    def __init__(self, step):
        self.step = step
        self.started = time.monotonic()
        self.first: Optional[tuple] = None  # (time, updates) of the first progress line
        self.updates = 0
        self.loss: Optional[str] = None
        self.dev_loss: Optional[str] = None
        self.format = step.display.progress  # None: its lines say nothing of its progress
        cap = self.format.max_updates.findall(" ".join(step.argv())) if self.format else []
        self.max_updates = int(cap[-1]) if cap else None
        # when its line was last shown; never yet, so the first is shown at once (time.monotonic()
        # counts from the machine's start: a 0 here would hold it back on a machine up for less
        # than the interval)
        self.printed = float("-inf")

    def read(self, line: str) -> bool:
        """Takes one output line; whether it was a dev evaluation (worth showing at once)."""
        if self.format is None:
            return False
        updates = self.format.updates.search(line)
        if updates:
            self.updates = int(updates.group(1))
            if self.first is None:
                self.first = (time.monotonic(), self.updates)
        loss = self.format.loss.search(line)
        if loss:
            self.loss = loss.group(1)
        dev = self.format.dev_loss.search(line)
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
    """Phases and their times, one progress line per running system instead of its output;
    live on a terminal (see the module docstring)."""

    def __init__(self, stream=None, interval: float = 30.0):
        super().__init__(stream_steps=False)
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty()
        self.interval = interval
        self.running: Dict[object, _Progress] = {}
        self.kind: Dict[object, str] = {}  # step -> its job's kind, a phase
        self.pending: Dict[str, int] = {}  # phase -> steps not finished
        self.began: Dict[str, float] = {}  # phase -> when its first step started
        self.bars: Dict[object, object] = {}  # step (or "data") -> its tqdm line, on a terminal

    # --- phases -----------------------------------------------------------------------
    def plan_started(self, planned) -> None:
        for job in planned.graph.jobs:
            for step in planned.steps_of(job):
                self.kind[step] = job.kind
                if not planned.states[step].done:
                    self.pending[job.kind] = self.pending.get(job.kind, 0) + 1
        if self.live:
            done = sum(state.done for state in planned.states.values())
            self.log(f"{done} step(s) done before, {len(planned.states) - done} to run"
                     + (f", {len(planned.unbuilt)} part(s) planned as they become known" if planned.unbuilt else ""))
            if self.pending.get("prepare"):
                from tqdm import tqdm

                total = sum(1 for kind in self.kind.values() if kind == "prepare")
                # disable=False: the scripts set TQDM_DISABLE for the tools' own bars, not these
                self.bars["data"] = tqdm(total=total, initial=total - self.pending["prepare"], desc="data",
                                         file=self.stream, disable=False,
                                         bar_format="{desc}: {n_fmt}/{total_fmt} steps [{elapsed}] {postfix}")

    def replanned(self, job, steps) -> None:
        for step in steps:
            self.kind[step] = job.kind
        self.pending[job.kind] = self.pending.get(job.kind, 0) + len(steps)
        if not self.live:
            super().replanned(job, steps)

    def _finished(self, step) -> None:
        kind = self.kind.get(step)
        if kind not in self.pending:
            return
        self.pending[kind] -= 1
        if self.pending[kind] == 0 and kind in self.began:
            if kind == "prepare" and "data" in self.bars:
                self.bars.pop("data").close()
            self.log(f"{PHASES.get(kind, kind)} took {time.monotonic() - self.began.pop(kind):.0f} s")

    # --- steps ------------------------------------------------------------------------
    def log(self, message: str) -> None:
        text = f"[{time.strftime('%H:%M:%S')}] {message}"
        with self._lock:
            if self.live:
                from tqdm import tqdm

                tqdm.write(text, file=self.stream)
            else:
                print(text, file=sys.stderr, flush=True)

    def step_skipped(self, step, why: str) -> None:
        if not self.live:
            super().step_skipped(step, why)
        elif self.kind.get(step) == "prepare" and "data" in self.bars:
            self.bars["data"].update(1)
        self._finished(step)

    def step_started(self, step, reason: str) -> None:
        kind = self.kind.get(step)
        self.began.setdefault(kind, time.monotonic())
        tracked = step.display.label and step.display.echo
        if tracked:
            with self._lock:
                self.running[step] = _Progress(step)
        if not self.live:
            super().step_started(step, reason)
        elif kind == "prepare" and "data" in self.bars:
            self.bars["data"].set_postfix_str(step.description)
        elif tracked:
            self._bar(step)

    def step_done(self, step, seconds: float) -> None:
        progress = self._ended(step)
        if not self.live:
            super().step_done(step, seconds)
        elif self.kind.get(step) == "prepare":
            if "data" in self.bars:
                self.bars["data"].update(1)
        else:
            self.log(progress.text() if progress else f"done  {step.description} ({seconds:.0f} s)")
        self._finished(step)

    def step_failed(self, step, error: str) -> None:
        self._ended(step)
        super().step_failed(step, error)
        self._finished(step)

    def _ended(self, step) -> Optional[_Progress]:
        with self._lock:
            progress = self.running.pop(step, None)
            bar = self.bars.pop(step, None)
            if bar is not None:
                bar.close()
            if progress is not None and not self.live:
                print(progress.text(), file=self.stream, flush=True)
        return progress

    def step_line(self, step, line: str) -> None:
        progress = self.running.get(step)
        if progress is None:
            return
        with self._lock:
            evaluated = progress.read(line)
            now = time.monotonic()
            if self.live:
                bar = self.bars.get(step)
                if bar is not None and (now - progress.printed > 0.5 or evaluated):
                    progress.printed = now
                    bar.set_description_str(progress.text(), refresh=True)
            elif evaluated or now - progress.printed > self.interval:
                progress.printed = now
                print(progress.text(), file=self.stream, flush=True)

    # --- the terminal's live lines ----------------------------------------------------
    def _bar(self, step):
        from tqdm import tqdm

        with self._lock:
            self.bars[step] = tqdm(total=None, desc=self.running[step].text(), file=self.stream, leave=False,
                                   disable=False, bar_format="{desc}")
