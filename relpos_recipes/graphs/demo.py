"""The demo: the study in miniature on the synthetic pair, one folder (``--out-dir``) holding
the data (OUT/data), each system (OUT/ARCH) and the reports (OUT/report/SET).

Everything is recorded relative to OUT, so a moved or copied OUT is still the same run.
The demo deletes nothing it did not make: a folder of OUT in its way without step manifests
is refused before any work, and a step that is redone replaces only its own files.
"""
import time
from pathlib import Path
from typing import Dict, Sequence

from ..engine import Display, Graph, Job, Launch, OutDir, ProgressConsole, Step, run
from ..engine.step import REPO
from . import tool
from .archs import check_archs
from .environment import RECIPE_ENVIRONMENT
from .reports import system_options
from .systems import (SystemsRun, demo_parser, systems_run, demo_training, print_outputs, refuse_unless_ours, train_step,
                      translate_steps)

DEMO_SYSTEMS = "transformer_abs,transformer_rel,transformer_rel_k,transformer_lstm_pos"


def report_step(run: SystemsRun, test_set: str, systems: Dict[str, Path]) -> Step:
    testset = run.data / "testsets" / test_set
    report = run.out / "report" / test_set
    named, read = system_options({arch: [folder] for arch, folder in systems.items()}, test_set, run.oracle)
    command = [tool("report"), "--source", testset / "seg.src", "--length-file", testset / "longer-side",
               "--ref", testset / "raw.tgt", *named, "--baseline", next(iter(systems)), "--tokenize", "none",
               "--metrics", "bleu,ter", "--edges", run.edges(test_set), "--train-limit", run.limit,
               "--bootstrap", 200, "--seed", run.seed,
               "--title", f"Demo, {test_set}: trained on pairs of up to {run.limit} subword tokens (length: longer side)",
               "--out-dir", OutDir(report)]
    return Step("report", command, home=report, root=run.out,
                inputs=[testset / "seg.src", testset / "longer-side", testset / "raw.tgt", *read],
                display=Display(echo=False, title=f"report {test_set}"))


def demo_graph(run: SystemsRun) -> Graph:
    """The data, each system (its training, then its translations of both test sets) and
    the reports."""
    systems = {system: run.out / system for system in run.systems}
    jobs = [Job("prepare", run.profile.steps(run), kind="prepare")]
    for system, save in systems.items():
        jobs.append(Job(system, [train_step(run, demo_training(run, system, run.seed, save)),
                                 *translate_steps(run, save)]))
    jobs.append(Job("reports", [report_step(run, test_set, systems) for test_set in run.profile.test_sets],
                    kind="report"))
    return Graph(jobs, roots=[run.out])


def demo_main(argv: Sequence[str]) -> int:
    args = demo_parser("demo.sh").parse_args(argv)
    args.systems = args.systems or DEMO_SYSTEMS.split(",")
    args.train_limit = args.train_limit or 50
    args.updates = args.updates or 2300
    args.out_dir = args.out_dir or REPO / "runs" / "demo"
    run_ = systems_run(args, args.systems)
    if not args.run_job:
        check_archs("--systems", run_.archs)
        if run_.concat:
            check_archs("--concat-systems", run_.concat)
        for path in (run_.data, *(run_.out / system for system in run_.systems),
                     *(run_.out / "report" / test_set for test_set in run_.profile.test_sets)):
            refuse_unless_ours(path, "demo.sh")
    launch = Launch.from_args("demo", argv, args, threads=run_.threads, gpus=run_.gpus, console=ProgressConsole(),
                              environment=RECIPE_ENVIRONMENT)
    began = time.monotonic()
    outcome = run(demo_graph(run_), launch)
    if launch.finishes_here:
        if launch.launcher == "local":
            launch.console.log(f"done in {time.monotonic() - began:.0f} s")
        print_outputs(run_.out / "report", run_.profile.test_sets, "report.md",
                      "report.md, report.json, buckets.png, lengths.png", outcome)
    return 0
