"""Planning: which steps are done, which run and why, and which would be refused, for a whole
graph at once, before any work.

A step is **done** when its manifest says it ended, records the identity that would run now,
inputs with the same content as now, and outputs that are still what it wrote.  Otherwise it
runs, and so does everything downstream of it (it may write something else).  A step of a
job's later part is known once what it is built from is final; until then the job runs.
"""
import dataclasses
import difflib
import fcntl
import os
import shlex
import sys
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from . import manifest
from .graph import Graph, Job, unique_steps
from .step import MANIFEST_DIR, Step, StepError

Scope = Callable[[Path], Optional[Iterable[str]]]


@dataclasses.dataclass
class State:
    done: bool
    reason: str = ""  # why it must run
    refusal: Optional[str] = None  # why it must not run (the recipe stops before any work)


def check_steps(steps: Sequence[Step]) -> Dict[Step, List[Step]]:
    """Each step's upstream steps (those writing a path it reads), after checking that no
    path is written twice, no manifest is shared and there is no cycle."""
    writers: Dict[Path, Step] = {}
    manifests: Dict[Path, Step] = {}
    for step in steps:
        other = manifests.setdefault(step.manifest_key, step)
        if other is not step:
            raise ValueError(f"steps {other.name!r} and {step.name!r} share {step.manifest_path}")
        for output in step.outputs:
            other = writers.setdefault(Path(output).resolve(), step)
            if other is not step:
                raise ValueError(f"{output} is an output of both {other.name!r} and {step.name!r}")
    # a step reads what another writes when the paths are equal or one holds the other
    below: Dict[Path, List[Step]] = {}  # a folder -> the steps writing inside it
    for written, writer in writers.items():
        for folder in written.parents:
            below.setdefault(folder, []).append(writer)
    order = {step: index for index, step in enumerate(steps)}
    upstream = {}
    for step in steps:
        found = set()
        for path in (Path(p).resolve() for p in step.inputs):
            found.update(writer for holder in (path, *path.parents) if (writer := writers.get(holder)))
            found.update(below.get(path, ()))
        found.discard(step)
        upstream[step] = sorted(found, key=order.__getitem__)
    topological(steps, upstream)
    return upstream


def topological(steps: Sequence[Step], upstream: Dict[Step, List[Step]]) -> List[Step]:
    order, state = [], {}

    def visit(step, chain):
        if state.get(step) == "done":
            return
        if state.get(step) == "visiting":
            raise ValueError("steps depend on each other in a cycle: " +
                             " -> ".join(s.name for s in chain + [step]))
        state[step] = "visiting"
        for parent in upstream[step]:
            visit(parent, chain + [step])
        state[step] = "done"
        order.append(step)

    for step in steps:
        visit(step, [])
    return order


def producer_scope(steps: Sequence[Step]) -> Scope:
    """For a path that a step of ``steps`` writes as a whole folder: the files its last run
    wrote there (from its manifest), so that a file a user put beside them (notes) makes no
    input change; None for any other path (all its files count)."""
    writers = {Path(out).resolve(): step for step in steps for out in step.outputs}

    def scope(path: Path) -> Optional[Iterable[str]]:
        writer = writers.get(Path(path).resolve())
        if writer is None or not Path(path).is_dir():
            return None
        record = manifest.of(writer)
        recorded = record.output_fingerprint(writer, path) if record else None
        return list(recorded) if recorded is not None else None

    return scope


def step_state(step: Step, upstream_pending: Sequence[Step] = (), scope: Scope = lambda path: None) -> State:
    """Whether ``step`` is done; if not, why; or why it may not run at all."""
    record = manifest.of(step)
    if record is None:
        foreign = _foreign_state(step)
        if foreign:
            return State(False, refusal=foreign)
        return State(False, "not run before")
    same_identity = record.identity == step.recorded_identity()
    if not same_identity:
        refusal = _refusal(step, record)
        if refusal:
            return State(False, refusal=refusal)
    if record.status == "failed":
        return State(False, f"failed before: {record.error or '?'}" if same_identity
                     else "failed before with another command")
    if record.status != "done":
        return State(False, "interrupted before" if same_identity else "started before with another command")
    if not same_identity:
        return State(False, "done before with another command")
    for output in step.outputs:
        if not output.exists():
            return State(False, f"{output} is missing")
        recorded = record.output_fingerprint(step, output)
        if recorded is not None and not manifest.same_content(
                manifest.fingerprint(output, recorded, only=recorded), recorded):
            return State(False, f"{output} is not what the step wrote")
    if upstream_pending:
        return State(False, f"{upstream_pending[0].description} runs first")
    changed = changed_input(step, record, scope)
    if changed is not None:
        # an in-place step would go on from work done on the old input: a training resumes
        refusal = _refusal(step, record, f"{changed} is not what it ran on") if step.in_place else None
        return State(False, f"{changed} changed", refusal=refusal)
    return State(True)


def changed_input(step: Step, record: manifest.Record, scope: Scope = lambda path: None) -> Optional[Path]:
    """The first input whose content differs from the one ``record`` ran on."""
    for path in step.inputs:
        recorded = record.input_fingerprint(step, path)
        if not manifest.same_content(manifest.fingerprint(path, recorded, only=scope(path)), recorded):
            return Path(path)
    return None


def _keeps_state(step: Step) -> bool:
    if step.policy.keeps_state is not None:
        return step.policy.keeps_state()
    return any(p.exists() for p in step.outputs)


def _foreign_state(step: Step) -> Optional[str]:
    """What is already where a step would write, with no manifest of it (a user's files, a
    plain fairseq-train's checkpoints, a folder of an older version), is never taken as the
    step's own nor replaced: an output file, or an output folder holding files (an ``OutDir``
    takes in files beside its own), or an in-place step's state."""
    if step.in_place:
        if not _keeps_state(step):
            return None
        found = [p for p in step.in_place_outputs if p.exists()]
    else:
        found = [p for p in step.outputs if p not in step.out_dirs and (
            p.is_file() or p.is_symlink() or (p.is_dir() and any(p.iterdir())))]
        if not found:
            return None
    names = sorted(os.path.relpath(p, step.home) for p in found) or ["files of its kind"]
    return (f"{step.home} holds {', '.join(names)} that no run of this recipe made (no {MANIFEST_DIR}/"
            f"{step.name}.json: another tool's, or an older version's work); use another folder, or move "
            "them away to start afresh here")


def _refusal(step: Step, record: manifest.Record, change: Optional[str] = None) -> Optional[str]:
    if step.policy.on_change != "refuse" or not _keeps_state(step):
        return None  # nothing of the other command is left to protect
    change = change or argv_change(record.identity, step.recorded_identity())
    return step.policy.refusal.format(home=step.home, title=step.description, manifest=step.manifest_path,
                                      change=change)


def argv_change(before: Sequence[str], now: Sequence[str]) -> str:
    """What differs between two argument lists, with the option each change belongs to:
    ``--arch transformer_abs, now transformer_rel``."""
    parts = []
    matcher = difflib.SequenceMatcher(a=list(before), b=list(now), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        option = before[i1 - 1] + " " if i1 and str(before[i1 - 1]).startswith("-") else ""
        was = " ".join(shlex.quote(str(a)) for a in before[i1:i2]) or "(nothing)"
        is_ = " ".join(shlex.quote(str(a)) for a in now[j1:j2]) or "(nothing)"
        parts.append(f"{option}{was}, now {is_}")
    return "; ".join(parts) or "the same arguments in another order"


def step_lock_path(step: Step) -> Path:
    return step.home / MANIFEST_DIR / f"{step.name}.lock"


def step_lock_holder(step: Step) -> Optional[str]:
    """Who holds the step's lock (a live process of a run of it), or None."""
    path = step_lock_path(step)
    try:
        with open(path, "r", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return handle.read().strip() or "another process"
    except OSError:
        return None
    return None


# ----------------------------------------------------------------------------------------
# the whole graph
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Plan:
    """The graph as it stands: every step known now, in the order it would run, with its
    state; the jobs whose later part is not built yet (it waits for steps that run)."""

    graph: Graph
    steps: List[Step]
    states: Dict[Step, State]
    upstream: Dict[Step, List[Step]]
    built: Dict[Job, List[Step]]
    unbuilt: List[Job]

    def pending(self) -> Set[Step]:
        return {step for step in self.steps if not self.states[step].done}

    def check_not_running(self) -> None:
        """A step that would run here while a process of another run of it still lives (an
        orphan of a killed run, a nested script) stops the run before any work.  (A step
        that runs in a queued SLURM job is no reason not to submit.)"""
        for step in self.steps:
            holder = None if self.states[step].done else step_lock_holder(step)
            if holder:
                raise StepError(f"{step.description} is still running in {step.home} ({holder}); wait for it "
                                "to end or stop it")

    def schedule(self) -> "Schedule":
        """A schedule that goes on from this plan (the plan itself stays as it is)."""
        return Schedule(self.graph, list(self.steps), dict(self.upstream), dict(self.built), list(self.unbuilt))

    def steps_of(self, job: Job) -> List[Step]:
        return [*job.steps, *self.built.get(job, [])]

    def job_runs(self, job: Job) -> bool:
        return job in self.unbuilt or any(not self.states[s].done for s in self.steps_of(job))

    def describe(self) -> str:
        """The graph as --dry-run prints it: every step, whether it is done, its command;
        then each later part that waits for steps that run."""
        lines = []
        for step in self.steps:
            state = self.states[step]
            lines.append(f"[{'done' if state.done else f'run ({state.reason})'}] {step.description}")
            lines.append("    " + _command_text(step))
        for job in self.unbuilt:
            waits = ", ".join(j.name for j in job.waits_for) or job.name
            lines.append(f"[later] {job.later.title} (planned when {waits} have run)")
            for step in job.later.preview() if job.later.preview else ():
                lines.append(f"    {step.description}, if all goes well: {_command_text(step)}")
        return "\n".join(lines)


def _command_text(step: Step) -> str:
    return " ".join(shlex.quote(a) for a in ("python" if a == sys.executable else a for a in step.argv()))


def prerequisites(job: Job, built: Dict[Job, List[Step]]) -> Tuple[List[Step], List[Job]]:
    """What a job's later part is built after: its own steps and those of the jobs it waits
    for (with their later parts), and those of the latter not built yet."""
    steps = list(job.steps)
    unbuilt = []
    for other in job.waits_for:
        steps += [*other.steps, *built.get(other, [])]
        if other.later is not None and other not in built:
            unbuilt.append(other)
    return steps, unbuilt


@dataclasses.dataclass
class Schedule:
    """The graph's steps as they become known: its jobs' steps, then each later part once what
    it is built from has finished, with each step's upstream steps.  :func:`plan` builds the
    later parts whose prerequisites are done, before any work; a local run (engine/local.py)
    goes on from there, building each as its prerequisites finish."""

    graph: Graph
    steps: List[Step]
    upstream: Dict[Step, List[Step]]
    built: Dict[Job, List[Step]]
    unbuilt: List[Job]  # the jobs whose later part is not built yet, in the graph's order

    @classmethod
    def of(cls, graph: Graph) -> "Schedule":
        steps = unique_steps(*(job.steps for job in graph.jobs))
        return cls(graph, steps, check_steps(steps), {}, [job for job in graph.jobs if job.later is not None])

    def ready(self, job: Job, finished: Callable[[Step], bool]) -> Optional[List[Step]]:
        """The steps ``job``'s later part is built after (:func:`prerequisites`) where it can
        be built now: the later parts it waits for are built and each of them has ``finished``;
        None while it cannot."""
        needed, waiting = prerequisites(job, self.built)
        return needed if not waiting and all(finished(step) for step in needed) else None

    def build(self, job: Job) -> List[Step]:
        """Builds ``job``'s later part; its steps that are new (a step another part declares
        too is known once)."""
        steps = list(job.later.build())
        self.unbuilt.remove(job)
        self.built[job] = steps
        self.steps = unique_steps(self.steps, steps)
        self.upstream = check_steps(self.steps)
        built = set(steps)
        return [step for step in self.steps if step in built]

    def drop(self, job: Job) -> None:
        """``job``'s later part will not be built (what it is built from failed)."""
        self.unbuilt.remove(job)
        self.built[job] = []

    def states(self, steps: Sequence[Step], pending: Iterable[Step] = ()) -> Dict[Step, State]:
        """The state of each of ``steps``, in the order they would run: a step runs where one
        it reads from runs (is ``pending``, or one of ``steps`` that runs); a refusal raises
        ``StepError`` here, before any work."""
        scope = producer_scope(self.steps)
        wanted, pending = set(steps), set(pending)
        states = {}
        for step in topological(self.steps, self.upstream):
            if step not in wanted:
                continue
            state = step_state(step, [s for s in self.upstream[step] if s in pending], scope)
            if state.refusal:
                raise StepError(state.refusal)
            if not state.done:
                pending.add(step)
            states[step] = state
        return states


def plan(graph: Graph) -> Plan:
    """Plans the whole graph: every step's state in order, each later part built where what
    it reads is final; refusals raise ``StepError`` here, before any work."""
    schedule = Schedule.of(graph)
    while True:
        states = schedule.states(schedule.steps)
        buildable = [job for job in schedule.unbuilt if schedule.ready(job, lambda step: states[step].done) is not None]
        if not buildable:
            return Plan(graph, topological(schedule.steps, schedule.upstream), states, schedule.upstream,
                        schedule.built, schedule.unbuilt)
        for job in buildable:
            schedule.build(job)
