"""Running steps on this machine: as many at a time as ``threads`` cores and ``gpus`` allow,
each in a process group of its own under the guard (engine/guard.py), its output appended to
its log and shown on the console, its outputs moved into place when it succeeded.  A job's
later part is built (re-planned) as soon as what it is built from has finished."""
import fcntl
import glob
import os
import queue
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import manifest, time_limit
from .console import Console
from .executor import Executor, Outcome
from .graph import Graph
from .lock import FolderLock
from .plan import Plan, changed_input, plan, producer_scope, step_lock_path, step_state
from .step import TEMP_PREFIX, Out, OutDir, Step, StepError, temporary_path

GUARD = Path(__file__).resolve().parent / "guard.py"


class StepFailed(Exception):
    def __init__(self, step: Step, message: str):
        super().__init__(message)
        self.step = step


class TimeLimit(Exception):
    """SLURM's warning that the job's time limit is near (SIGUSR1): the run stopped its
    ``steps``, which are to go on in the requeued job."""

    def __init__(self):
        super().__init__("the job's time limit is near")
        self.steps: List[Step] = []


class LocalRunner:
    """Runs a graph here.  A failed step stops the run (its error raised as ``StepError``),
    or with the graph's ``keep_going`` only what depends on it.  A step that asks for a GPU
    gets the least busy one, which runs at most ``jobs_per_gpu`` such steps at a time (None:
    as many as the cores allow), through CUDA_VISIBLE_DEVICES."""

    def __init__(self, threads: int = 1, gpus: int = 0, console: Optional[Console] = None, time_limit: bool = False,
                 jobs_per_gpu: Optional[int] = None):
        if threads < 1:
            raise StepError(f"--threads: expected at least 1, got {threads}")
        if jobs_per_gpu is not None and jobs_per_gpu < 1:
            raise StepError(f"--jobs-per-gpu: expected at least 1, got {jobs_per_gpu}")
        self.threads = threads
        self.gpus = gpus
        self.jobs_per_gpu = jobs_per_gpu
        self.console = console or Console()
        self.time_limit = time_limit  # SIGUSR1 stops the run as TimeLimit (a SLURM job near its limit)

    def run(self, graph: Graph, planned: Optional[Plan] = None) -> Outcome:
        planned = planned or plan(graph)
        planned.check_not_running()
        return _LocalRun(self, graph, planned).run()

    def step_env(self, step: Step, gpu: Optional[int]) -> Dict[str, str]:
        """The environment a step runs in here: its own variables, and its GPU (None: none)."""
        env = {**os.environ, **step.resources.env}
        if gpu is not None:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            ids = visible.split(",") if visible else [str(g) for g in range(self.gpus)]
            env["CUDA_VISIBLE_DEVICES"] = ids[gpu % len(ids)]
        return env


class _LocalRun:
    """One run of a plan by a LocalRunner: the steps that wait, those that run (each on a
    thread of its own, which reports to ``finished`` when its step ends), the cores and GPUs
    they hold, and the outcome so far.  Later parts are built as their prerequisites finish."""

    def __init__(self, runner: LocalRunner, graph: Graph, planned: Plan):
        self.runner, self.graph, self.console = runner, graph, runner.console
        self.schedule = planned.schedule()
        self.outcome = Outcome()
        self.waiting: List[Step] = []
        self.finished: "queue.Queue[Tuple[RunningStep, Optional[BaseException]]]" = queue.Queue()
        self.running: Dict[Step, Tuple[RunningStep, threading.Thread, Optional[int]]] = {}
        self.gpu_load = [0] * runner.gpus
        self.free_cpus = runner.threads
        self.console.plan_started(planned)
        for step in planned.steps:
            if planned.states[step].done:
                self._skip(step, "done")
            else:
                self.waiting.append(step)

    def run(self) -> Outcome:
        stopping = _install_stop_handlers(self.runner.time_limit)
        try:
            while True:
                self._start_ready()
                if not self.running:
                    if self._build_laters():
                        continue
                    break
                self._collect(*_next_finished(self.finished, stopping))
                self._build_laters()
        except BaseException as error:
            if isinstance(error, TimeLimit):
                error.steps = list(self.running)
            _stop_all([(runner, thread) for runner, thread, _ in self.running.values()])
            raise
        finally:
            _restore_stop_handlers(stopping)
        if self.waiting:
            raise StepError("internal: steps wait for nothing that runs: " + ", ".join(s.name for s in self.waiting))
        return self.outcome

    def _skip(self, step: Step, why: str) -> None:
        self.console.step_skipped(step, why)
        self.outcome.skipped.append(step)

    def _failed_upstream(self, step: Step) -> Optional[Step]:
        outcome = self.outcome
        return next((u for u in self.schedule.upstream[step] if u in outcome.failed or u in outcome.blocked), None)

    def _build_laters(self) -> bool:
        """Builds each later part whose prerequisites have all finished; whether any was."""
        schedule, outcome = self.schedule, self.outcome
        grown = False
        for job in list(schedule.unbuilt):
            needed = schedule.ready(job, outcome.finished)
            if needed is None:
                continue
            culprit = next((s for s in needed if s in outcome.failed or s in outcome.blocked), None)
            if culprit is not None and not job.after_any:
                outcome.blocked_jobs[job] = outcome.blocked.get(culprit, culprit)
                schedule.drop(job)
                continue
            new = schedule.build(job)
            self.console.replanned(job, new)
            for step, state in schedule.states(new, pending=[*self.waiting, *self.running]).items():
                if state.done:
                    self._skip(step, "done")
                else:
                    self.waiting.append(step)
            grown = True
        return grown

    def _start_ready(self) -> None:
        # trainings first: they are the long steps, and the short ones fill the gaps
        for step in sorted(self.waiting, key=lambda s: not s.in_place):
            culprit = self._failed_upstream(step)
            if culprit is not None and not step.policy.after_failures:
                self.waiting.remove(step)
                self.outcome.blocked[step] = self.outcome.blocked.get(culprit, culprit)
                continue
            cpus = min(step.resources.cpus, self.runner.threads)
            if any(u in self.waiting or u in self.running for u in self.schedule.upstream[step]) \
                    or cpus > self.free_cpus:
                continue
            open_gpus = [g for g in range(self.runner.gpus)
                         if self.runner.jobs_per_gpu is None or self.gpu_load[g] < self.runner.jobs_per_gpu]
            if step.resources.gpus and self.runner.gpus and not open_gpus:
                continue
            self.waiting.remove(step)
            state = step_state(step, scope=producer_scope(self.schedule.steps))  # its inputs are final now
            if state.refusal:
                raise StepError(state.refusal)
            if state.done:
                self._skip(step, "done: its inputs came out the same")
                continue
            gpu = None
            if step.resources.gpus and self.runner.gpus:
                gpu = min(open_gpus, key=lambda g: self.gpu_load[g])
                self.gpu_load[gpu] += 1
            self.free_cpus -= cpus
            running = RunningStep(step, self.console.step_line, self.runner.step_env(step, gpu),
                                  producer_scope(self.schedule.steps))
            self.console.step_started(step, state.reason)
            thread = threading.Thread(target=_run_and_report, args=(running, self.finished), daemon=True)
            self.running[step] = (running, thread, gpu)
            thread.start()

    def _collect(self, finished: "RunningStep", error: Optional[BaseException]) -> None:
        """A step's thread has ended: its cores and GPU are free, and its end is recorded."""
        step = finished.step
        _, thread, gpu = self.running.pop(step)
        thread.join()
        self.free_cpus += min(step.resources.cpus, self.runner.threads)
        if gpu is not None:
            self.gpu_load[gpu] -= 1
        if error is None:
            self.console.step_done(step, finished.seconds)
            self.outcome.ran.append(step)
        elif isinstance(error, StepFailed):
            self.outcome.failed[step] = str(error)
            self.console.step_failed(step, str(error))
            if not self.graph.keep_going:
                raise StepError(str(error))
        else:
            raise error


class LocalExecutor(Executor):
    """``--launcher local``: the graph's steps run on this machine, the run's folders locked
    against another run of them (``--dry-run``: the plan is printed)."""

    def run(self, graph: Graph) -> Optional[Outcome]:
        launch = self.launch
        if launch.dry_run:
            manifest.check_manifests(graph.roots)
            print(plan(graph).describe())
            return None
        with FolderLock(graph.roots, launch.what()):
            manifest.check_manifests(graph.roots)
            return LocalRunner(launch.threads, launch.gpus, launch.console, jobs_per_gpu=launch.jobs_per_gpu).run(graph)


def _run_and_report(runner: "RunningStep", finished) -> None:
    try:
        runner.run()
        finished.put((runner, None))
    except BaseException as error:  # handed to the main thread
        finished.put((runner, error))


def _stop_all(running: Sequence[Tuple["RunningStep", threading.Thread]]) -> None:
    """SIGTERM to every running step's process group, then SIGKILL to what is left after 10 s."""
    for runner, _ in running:
        runner.stop()
    deadline = time.monotonic() + 10
    for runner, thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
        runner.kill()
        thread.join(1)


def _next_finished(finished, stopping):
    while True:
        try:
            return finished.get(timeout=0.2)
        except queue.Empty:
            if stopping.time_limit and time_limit.near.is_set():
                raise TimeLimit()
            if stopping.is_set():
                raise KeyboardInterrupt


class _StopFlag(threading.Event):
    previous: dict
    time_limit: bool = False


def _install_stop_handlers(time_limit_stops: bool) -> _StopFlag:
    """SIGTERM and SIGHUP stop a run as Ctrl-C does: every running step is stopped; with
    ``time_limit_stops``, so does SLURM's warning before the job's time limit (TimeLimit)."""
    flag = _StopFlag()
    flag.previous = {}
    flag.time_limit = time_limit_stops
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            flag.previous[signum] = signal.signal(signum, lambda *_: flag.set())
    return flag


def _restore_stop_handlers(flag: _StopFlag) -> None:
    for signum, handler in flag.previous.items():
        signal.signal(signum, handler)


# ----------------------------------------------------------------------------------------
# one step
# ----------------------------------------------------------------------------------------
def clear_temporaries(step: Step) -> None:
    """Removes what an interrupted run of ``step`` left under temporary names."""
    for output in step.outputs:
        for leftover in output.parent.glob(f"{TEMP_PREFIX}*.{output.name}*") if output.parent.is_dir() else ():
            remove(leftover)


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


class RunningStep:
    """One step's process: the command under the guard, in a session of its own (stopping it
    stops its children too), holding the step's lock; its output appended to its log and
    passed line by line to ``on_line``."""

    def __init__(self, step: Step, on_line: Callable[[Step, str], None], env: Dict[str, str],
                 scope=lambda path: None):
        self.step = step
        self.on_line = on_line
        self.env = env
        self.scope = scope
        self.token = f"{os.getpid()}-{id(self) % 100000}"
        self.process: Optional[subprocess.Popen] = None
        self.stopped = False  # by the engine: interrupted, not failed
        self.seconds = 0.0
        self.published: List[Path] = []  # what its OutDirs received
        self.before: Optional[manifest.Record] = None  # the manifest of its last run

    def run(self) -> None:
        step = self.step
        with StepLock(step) as lock:
            record = self._prepare()
            tail: List[str] = []
            succeeded = False
            try:
                try:
                    with open(step.log_path, "a", encoding="utf-8") as log:
                        log.write(f"# {manifest.now()} {' '.join(shlex.quote(a) for a in step.argv())}\n")
                        log.flush()
                        started = time.monotonic()
                        code = self._execute(log, tail, lock.fileno())
                        self.seconds = time.monotonic() - started
                except OSError as err:  # the log could not be written: a full disk
                    raise StepFailed(step, f"{step.description}: {manifest.disk_error(err, step.log_path)}") from None
                if code != 0:
                    raise StepFailed(step, _failure_text(step, code, tail))
                self._publish()
                succeeded = True
            except StepFailed as failure:
                if not self.stopped:  # a stopped step stays "running": a re-run says it was interrupted
                    record.status, record.ended = "failed", manifest.now()
                    record.error = str(failure).splitlines()[0][:500]
                    manifest.write(step.manifest_path, record)
                raise
            finally:
                self.kill()  # whatever happened above, no process of the step outlives it
                if not succeeded:
                    self._discard()
            record.status, record.ended = "done", manifest.now()
            record.published = [step.relative(p) for p in self.published]
            record.outputs = {step.relative(p): self._output_fingerprint(p) for p in step.outputs}
            manifest.write(step.manifest_path, record)

    def _prepare(self) -> manifest.Record:
        """Clears what an earlier run left, checks the inputs and writes the 'running' record."""
        step = self.step
        self.before = manifest.of(step)
        try:
            clear_temporaries(step)
            self._clear_other_commands_work()
            self._remove_published_before()
            for output in step.outputs:
                output.parent.mkdir(parents=True, exist_ok=True)
            for folder in step.out_dirs:
                folder.mkdir(parents=True, exist_ok=True)
                temporary_path(folder, self.token).mkdir(parents=True)
            step.log_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StepFailed(step, f"{step.description}: {manifest.disk_error(err, Path(err.filename or step.home))}") \
                from None
        # an input unchanged since the last run (size, mtime) keeps its recorded digest: not read again
        inputs = {Path(p): manifest.fingerprint(p, self.before.input_fingerprint(step, p) if self.before else None,
                                                only=self.scope(p)) for p in step.inputs}
        missing = [str(p) for p, fp in inputs.items() if fp is None]
        if missing and not step.policy.after_failures:
            raise StepFailed(step, f"{step.description}: input {missing[0]} does not exist")
        record = manifest.Record.start(step, inputs)
        before = self.before
        if before is not None and before.status == "running" and before.identity == record.identity:
            record.requeues = before.requeues  # the same run, requeued: its count goes on
        manifest.write(step.manifest_path, record)
        return record

    def _output_fingerprint(self, path: Path) -> Optional[manifest.Fingerprint]:
        if Path(path) in self.step.out_dirs:
            names = [str(p.relative_to(path)) for p in self.published if Path(p).parent == Path(path)]
            return manifest.fingerprint(path, only=names)
        return manifest.fingerprint(path)

    def _clear_other_commands_work(self) -> None:
        """An in-place step that starts afresh (another command, other inputs) first removes
        the files its command made (by name: never a user's file beside them)."""
        step = self.step
        record = self.before
        if not step.in_place or record is None or step.policy.on_change == "go_on" or (
                record.identity == step.recorded_identity() and changed_input(step, record, self.scope) is None):
            return  # nothing, or work the step goes on from: the same command's on the same inputs, or asked to
        made = [re.compile(pattern) for pattern in step.policy.owns]
        for leftover in step.home.iterdir() if step.home.is_dir() else ():
            if any(pattern.fullmatch(leftover.name) for pattern in made):
                remove(leftover)
        for output in step.in_place_outputs:
            remove(Path(output))

    def _execute(self, log, tail: List[str], lock_fd: int) -> int:
        # -S: the guard needs the standard library alone, and starts without the site's .pth
        # files in a third of the CPU time (0.06 s against 0.16 s: one guard per step)
        self.process = subprocess.Popen(
            [sys.executable, "-S", str(GUARD), str(os.getpid()), str(lock_fd), "--", *self.step.argv(self.token)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
            start_new_session=True, pass_fds=[lock_fd], text=True, encoding="utf-8", errors="replace", bufsize=1,
        )
        for line in self.process.stdout:
            log.write(line)
            log.flush()
            line = line.rstrip("\n")
            tail.append(line)
            del tail[:-40]
            self.on_line(self.step, line)
        return self.process.wait()

    def stop(self) -> None:
        self.stopped = True
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.process and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                pass

    def _publish(self) -> None:
        """Moves every output from its temporary name to its final one.  Into a folder that
        exists, files go one by one: the step's own files of its last run are replaced, a
        file someone else put there stays."""
        for arg in self.step.command:
            if isinstance(arg, Out):
                for final in arg.outputs:
                    temp = temporary_path(final, self.token)
                    if not temp.exists():
                        raise StepFailed(self.step, f"{self.step.description}: the command "
                                                    f"succeeded but wrote no {final}")
                    if temp.is_dir() and final.is_dir():
                        self._replace_own_files(final, temp)
                    else:
                        os.replace(temp, final)
            elif isinstance(arg, OutDir):
                temp = temporary_path(arg.path, self.token)
                for name in sorted(os.listdir(temp)):
                    target = Path(arg.path) / name
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    os.replace(temp / name, target)
                    self.published.append(target)
                temp.rmdir()
        missing = [p for p in self.step.in_place_outputs if not Path(p).exists()]
        if missing:
            raise StepFailed(self.step, f"{self.step.description}: the command ended without "
                                        f"writing {missing[0]} (see {self.step.log_path})")

    def _replace_own_files(self, final: Path, temp: Path) -> None:
        record = self.before
        made_before = (record.output_fingerprint(self.step, final) if record else None) or {}
        for name in made_before:
            remove(final / name)
        for name, file in manifest.files_of(temp):
            target = final / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(file, target)
        shutil.rmtree(temp)

    def _remove_published_before(self) -> None:
        """The files an OutDir step wrote last time go before it runs again, so that a run
        that fails leaves none of them to pass for its own (a stale board); other files in
        the folder stay."""
        record = self.before
        for recorded in (record.published if record else []):
            path = self.step.absolute(recorded)
            if path.parent in self.step.out_dirs:
                remove(path)

    def _discard(self) -> None:
        """Removes the step's temporary outputs, and what its command named after them (a
        tool's own temporary file beside its output, left when the step was stopped)."""
        for arg in self.step.command:
            if isinstance(arg, Out):
                finals = [Path(arg.path), *arg.outputs]
            elif isinstance(arg, OutDir):
                finals = [Path(arg.path)]
            else:
                continue
            for final in finals:
                temporary = temporary_path(final, self.token)
                for leftover in temporary.parent.glob(glob.escape(temporary.name) + "*"):
                    remove(leftover)


def _failure_text(step: Step, code: int, tail: Sequence[str]) -> str:
    errors = [line for line in tail if "error" in line.lower()]
    last = (errors or [line for line in tail if line.strip()] or ["(no output)"])[-1].strip()
    return f"{step.description} failed (exit {code}): {last}"


class StepLock:
    """The step's own lock (``HOME/.steps/NAME.lock``), held while any process of a run of it
    lives: a second run of the same step, from this recipe, a nested script or an orphan of a
    killed engine, is refused by name."""

    def __init__(self, step: Step):
        self.step = step
        self.handle = None

    def __enter__(self):
        path = step_lock_path(self.step)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(path, "a+", encoding="utf-8")
        except OSError as err:
            raise StepFailed(self.step, f"{self.step.description}: {manifest.disk_error(err, path)}") from None
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.seek(0)
            holder = self.handle.read().strip() or "another process"
            self.handle.close()
            raise StepFailed(self.step, f"{self.step.description} is already running in {self.step.home} "
                                        f"({holder}); wait for it to end or stop it") from None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {manifest.now()}\n")
        self.handle.flush()
        return self

    def fileno(self) -> int:
        return self.handle.fileno()

    def __exit__(self, *exc):
        self.handle.close()
