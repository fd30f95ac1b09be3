"""The reproduction recipes: the study's tables 1-4 and table 5 (every scheme) on WMT19, and
the Tatoeba study.  Each is one graph: the data of each pair, then per system its training
and its translations, then the reports."""
import dataclasses
import hashlib
import os
import shlex
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .options import DEFAULT_THREADS, Parser, absolute, folder, log, name_list, non_negative_int, positive_int
from . import PY, tool
from .data import Preparation, preparation_steps, testsets_graph, wmt_fetcher
from .demo import all_archs, check_archs, effective_labels, refuse_unless_ours
from ..engine.console import ProgressConsole
from .presets import (SMOKE_TEST_LINES, SMOKE_TRAIN, SMOKE_TRANSLATE, TATOEBA_LIMIT, TATOEBA_MODEL, TATOEBA_SETS,
                      WMT_SHARDS,
                      tatoeba_edges)
from ..engine.core import OutDir, Step, StepError, merged
from ..engine.slurm import Job, Launch, add_launcher_options, failures_of
from .prepare import (REPO, SMOKE_TATOEBA_PREPARE, WMT, local_dir, prepared_view, smoke_slice, smoke_tatoeba_export,
                      tatoeba_checked_preparation, tatoeba_parser)
from .training import Translation, train_options, visible_gpus

SMOKE_SEGMENTATION = {"de-en": 400, "zh-en": 1000}
# pl_smoke_standin: stand-in corpora cut from the newstest files, named like the real ones
SMOKE_STANDIN = {
    "de-en": [("commoncrawl.de-en", "newstest2019", 1, 500), ("europarl-v9.de-en", "newstest2019", 501, 1000),
              ("news-commentary-v14.de-en", "newstest2019", 1001, 1500),
              ("rapid2019.de-en", "newstest2019", 1501, 2000)]
    + [(f"newstest{y}", f"newstest{y}", 1, SMOKE_TEST_LINES) for y in range(2008, 2019)],
    "zh-en": [("news-commentary-v14.en-zh", "newstest2018", 1, 1300), ("UNv1.0.en-zh", "newstest2018", 1301, 2600),
              ("cwmt", "newstest2018", 2601, 3981), ("newsdev2017", "newstest2017", 1, SMOKE_TEST_LINES),
              ("newstest2017", "newstest2017", SMOKE_TEST_LINES + 1, 2 * SMOKE_TEST_LINES),
              ("newstest2019", "newstest2019", 1, SMOKE_TEST_LINES)],
}


@dataclasses.dataclass
class System:
    label: str
    arch: str
    limit: int
    variant: str = ""  # another model of the architecture (other position options): its folder's suffix

    def folder(self, arch: str) -> str:
        return f"{arch}-len{self.limit}" + (f"-{self.variant}" if self.variant else "")


@dataclasses.dataclass
class Report:
    name: str
    pair: str
    test_set: str
    baseline: str
    systems: List[System]


def _table(n: int, archs: Sequence[str]) -> List[Report]:
    abs_, rel = "transformer_abs", "transformer_rel"
    if n == 1:
        return [Report(f"table1-{pair}", pair, test, "Absolute", [System("Absolute", abs_, 100), System("Relative", rel, 100)])
                for pair, test in (("de-en", "newstest2018"), ("zh-en", "newstest2019"))]
    if n == 2:
        return [Report("table2", "de-en", "newstest_all", "Absolute@100", [
            System("Absolute@100", abs_, 100), System("Relative@100", rel, 100),
            System("LSTM@100", "transformer_lstm_pos", 100), System("Absolute@75", abs_, 75),
            System("Relative@75", rel, 75)])]
    if n == 3:
        return [Report("table3", "de-en", "concat_seq", "Absolute@100", [
            System("Absolute@100", abs_, 100), System("Relative@100", rel, 100),
            System("Absolute@75", abs_, 75), System("Relative@75", rel, 75)])]
    if n == 4:
        return [Report("table4", "de-en", "concat_seq", "Relative", [
            System("Relative", rel, 100), System("Relative sinusoidal", "transformer_rel_sin", 100),
            System("Relative gammaK-only", "transformer_rel_k", 100),
            System("Relative and absolute", "transformer_rel_abs", 100)])]
    return [Report(f"table5-{test}", "de-en", test, f"{archs[0]}@100",
                   [System(f"{arch}@{limit}", arch, limit) for limit in (100, 75) for arch in archs])
            for test in ("newstest_all", "concat_seq")]


def _extra_system(text: str) -> System:
    label, equals, rest = text.partition("=")
    arch, at, limit = rest.rpartition("@")
    if not (equals and label and at and arch and limit.isdigit()):
        raise StepError(f"--system wants LABEL=ARCH@MAXLEN, got '{text}'")
    return System(label, arch, int(limit))


@dataclasses.dataclass
class StudyRun:
    smoke: bool
    work_root: Path
    runs_root: Path
    local_dirs: List[Path]
    offline: bool
    threads: int
    gpus: int
    dry_run: bool
    smoke_data: Path = Path()

    def prep_dir(self, pair: str) -> Path:
        return self.work_root / f"wmt19-{pair}"


def _environment(name: str) -> List[str]:
    return shlex.split(os.environ.get(name, ""))


def table_main(n: int, argv: Sequence[str]) -> int:
    parser = Parser(f"table{n}.sh")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--work-root", type=folder, default=REPO / "work")
    parser.add_argument("--runs-root", type=folder, default=REPO / "runs")
    parser.add_argument("--local-dir", type=local_dir, action="append", default=[])
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--system", action="append", default=[])
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS)
    add_launcher_options(parser)
    if n == 5:
        parser.add_argument("--archs", type=name_list)
    args = parser.parse_args(argv)
    smoke = os.environ.get("SMOKE", "0") == "1"
    run = StudyRun(smoke=smoke, work_root=absolute(args.work_root), runs_root=absolute(args.runs_root),
                   local_dirs=[absolute(d) for d in args.local_dir], offline=args.offline, threads=args.threads,
                   gpus=0, dry_run=args.dry_run)
    if smoke:
        run.work_root, run.runs_root = run.work_root / "smoke", run.runs_root / "smoke"
        run.smoke_data = Path(os.environ.get("SMOKE_DATA", REPO.parent / "shared" / "data" / "wmt-newstest"))
        if not args.dry_run and not run.smoke_data.is_dir():
            raise StepError(f"SMOKE=1 needs a small local data directory laid out like wmt-newstest "
                            f"(de-en/newstestYYYY.{{de,en}}, zh-en/newstestYYYY.{{zh,en}}); set SMOKE_DATA "
                            f"(tried {run.smoke_data})")
        if not args.run_job:
            log(f"SMOKE=1: tiny data and models (work: {run.work_root}, runs: {run.runs_root})")
    extra = [_extra_system(text) for text in args.system]
    override = os.environ.get("RELPOS_ARCH_OVERRIDE", "")
    archs = (args.archs or all_archs()) if n == 5 else []
    if not args.dry_run and not args.run_job:
        if extra:
            check_archs("--system", [s.arch for s in extra])
        if override:
            check_archs("RELPOS_ARCH_OVERRIDE", [override])
        if n == 5 and args.archs:
            check_archs("--archs", archs)
    if not args.dry_run and args.launcher == "local":
        run.gpus = visible_gpus()
    elif args.launcher == "slurm" or args.run_job:
        run.gpus = visible_gpus() if args.run_job else args.slurm_gpus_per_job
    reports = _table(n, archs)
    for report in reports:
        report.systems += extra
    _label_by_effective_specs(reports, override)
    launch = Launch(f"table{n}", argv, args, roots=[run.work_root, run.runs_root], threads=run.threads, gpus=run.gpus)
    launch.run(study_jobs(run, reports, override, in_job=bool(args.run_job)))
    if not run.dry_run and not args.run_job and (args.launcher == "local" or args.wait) \
            and os.environ.get("SKIP_REPORT") != "1":
        for report in reports:
            print((run.runs_root / "reports" / report.name / "report.md").read_text(encoding="utf-8"))
        for report in reports:
            print(f"report: {run.runs_root / 'reports' / report.name}/report.md")
    return 0


def _label_by_effective_specs(reports: Sequence[Report], override: str) -> None:
    """Systems that TRAIN_EXTRA_ARGS gives other position schemes than their architecture's
    are labelled, and saved, as what they are."""
    extra = _environment("TRAIN_EXTRA_ARGS")
    if not extra:
        return
    systems = [s for r in reports for s in r.systems]
    labels = effective_labels(sorted({override or s.arch for s in systems}), extra)
    for system in systems:
        arch = override or system.arch
        if labels[arch] != arch:
            system.label += f" ({labels[arch]})"
            system.variant = hashlib.sha1(labels[arch].encode()).hexdigest()[:8]


def study_jobs(run: StudyRun, reports: Sequence[Report], override: str, in_job: bool = False) -> List[Job]:
    """Per pair its data, per system (architecture and training limit) its training and its
    translations of the test sets of the reports it is in, per report the report.  In a
    report's SLURM job, the systems that failed are listed under the table instead of scored."""
    jobs: List[Job] = []
    for pair in dict.fromkeys(r.pair for r in reports):
        mine = [r for r in reports if r.pair == pair]
        limits = sorted({s.limit for r in mine for s in r.systems}, key=lambda x: (x != 100, -x))
        sets = list(dict.fromkeys(r.test_set for r in mine))
        jobs.append(Job(f"prepare-{pair}", _pair_steps(run, pair, limits, sets), kind="prepare"))
        systems: Dict[str, Job] = {}
        for report in mine:
            for system in report.systems:
                arch = override or system.arch
                save = run.runs_root / f"wmt19-{pair}" / system.folder(arch)
                name = f"{pair}-{save.name}"
                job = systems.get(name) or Job(name, [_train_step(run, pair, arch, system.limit, save)])
                systems[name] = job
                if not any(step.home == save / report.test_set for step in job.steps):
                    job.steps.append(_translate_step(run, pair, save, report.test_set))
        jobs += systems.values()
        if os.environ.get("SKIP_REPORT") == "1":
            continue
        failures = failures_of(systems.values()) if in_job else {}
        for report in mine:
            entries = []
            for system in report.systems:
                save = run.runs_root / f"wmt19-{pair}" / system.folder(override or system.arch)
                entries.append((system.label, save / report.test_set, failures.get(f"{pair}-{save.name}")))
            jobs.append(Job(f"report-{report.name}", [_report_step(run, report, entries)], kind="report",
                            after_any=True))
    return jobs


def _pair_steps(run: StudyRun, pair: str, limits: Sequence[int], sets: Sequence[str]) -> List[Step]:
    spec = WMT[pair]
    local_dirs, offline, standin = list(run.local_dirs), run.offline, []
    seg_size, threads = spec["seg_size"], run.threads
    if run.smoke:
        folder_ = run.work_root / f"standin-{pair}"
        for name, source, first, last in SMOKE_STANDIN[pair]:
            for lang in (spec["src"], spec["tgt"]):
                standin.append(Step(f"{name}.{lang}", [tool("cut-lines"), "--input",
                                                        run.smoke_data / pair / f"{source}.{lang}", "--first", first,
                                                        "--last", last, "--out", _out(folder_ / f"{name}.{lang}")],
                                    home=folder_, inputs=[run.smoke_data / pair / f"{source}.{lang}"],
                                    title=f"SMOKE stand-in {name}.{lang}"))
        local_dirs, offline, seg_size = [folder_], True, SMOKE_SEGMENTATION[pair]
    p = Preparation(work=run.prep_dir(pair), pair=pair, src=spec["src"], tgt=spec["tgt"], title=spec["title"],
                    textproc=spec["textproc"], seg=spec["seg"], seg_size=seg_size, corpora=spec["corpora"].split(","),
                    dev_sets=spec["dev_sets"], test_set=spec["test_set"], lens=list(limits), shards=WMT_SHARDS,
                    fetcher=wmt_fetcher(local_dirs, offline), default_test_sets=spec["default_test_sets"],
                    concat_of=spec["concat_of"], threads=threads)
    prep = prepared_view(p)
    return merged(standin, preparation_steps(p), testsets_graph(prep, sets, lambda name: p.fetcher.testset(p, name), threads))


def _out(path: Path):
    from ..engine.core import Out

    return Out(path)


def _train_step(run: StudyRun, pair: str, arch: str, limit: int, save: Path) -> Step:
    train_args = (list(SMOKE_TRAIN) if run.smoke else []) + _environment("TRAIN_EXTRA_ARGS")
    training = train_options(train_args, data=run.prep_dir(pair) / "data-bin" / f"len{limit}", arch=arch, save=save,
                             n_shards=WMT_SHARDS)
    tasks = int(os.environ.get("SLURM_NTASKS", "1")) if os.environ.get("SLURM_JOB_ID") else 1
    train = training.step(1 if tasks > 1 and run.gpus else run.gpus, root=run.runs_root, label=save.name,
                          tasks=tasks, srun=True)
    if run.gpus:
        train.cpus = run.threads  # one training at a time, on every GPU
    return train


def _translate_step(run: StudyRun, pair: str, save: Path, test_set: str) -> Step:
    translation = Translation(checkpoint=save / "checkpoint_best.pt", testset=run.prep_dir(pair) / "testsets" / test_set,
                              out=save / test_set, cpu=not run.gpus,
                              extra=list(SMOKE_TRANSLATE) if run.smoke else [])
    translate = translation.step((WMT[pair]["src"], WMT[pair]["tgt"]), root=run.runs_root, label=save.name,
                                 gpus=1 if run.gpus else 0)
    if run.gpus:
        translate.cpus = run.threads
    return translate


def _report_step(run: StudyRun, report: Report, systems: Sequence[Tuple[str, Path, Optional[str]]]) -> Step:
    """Scored with sacreBLEU's 13a tokenization of the detokenized output against the raw
    references (REPORT_TOKENIZE=none: the Moses-tokenized output against the Moses-tokenized
    references, the study's "BLEU on tokenized text"; meaningful for De->En)."""
    spec = WMT[report.pair]
    testset = run.prep_dir(report.pair) / "testsets" / report.test_set
    tokenize = os.environ.get("REPORT_TOKENIZE", "13a")
    hyp, ref = ("hyp.tok", testset / f"tok.{spec['tgt']}") if tokenize == "none" else ("hyp.txt", testset / f"raw.{spec['tgt']}")
    hyps = [(label, out / hyp) for label, out, failure in systems if not failure]
    failed = [a for label, _, failure in systems if failure for a in ("--failed", f"{label}={failure}")]
    baseline = report.baseline if any(label == report.baseline for label, _ in hyps) or not hyps else hyps[0][0]
    out = run.runs_root / "reports" / report.name
    command = [PY, "-m", "relpos_analysis.report", "--source", testset / f"seg.{spec['src']}", "--ref", ref,
               *[a for label, path in hyps for a in ("--system", f"{label}={path}")], *failed,
               *(["--bootstrap", "50"] if run.smoke else []), *_environment("REPORT_EXTRA_ARGS"),
               "--baseline", baseline, "--edges", "25,50,75,100", "--train-limit", "100",
               "--tokenize", tokenize, "--title", f"{report.name} ({report.pair}, {report.test_set})",
               "--out-dir", OutDir(out)]
    return Step("report", command, home=out, root=run.runs_root, echo=False, title=f"report {report.name}",
                inputs=[testset / f"seg.{spec['src']}", ref, *[path for _, path in hyps]])


# ----------------------------------------------------------------------------------------
# reproduce/tatoeba.sh
# ----------------------------------------------------------------------------------------
def tatoeba_main(argv: Sequence[str]) -> int:
    parser = Parser("reproduce/tatoeba.sh")
    parser.add_argument("--from", dest="source", type=Path)
    parser.add_argument("--download", action="store_true")
    parser.add_argument("--systems", type=name_list, default="transformer_abs,transformer_rel,transformer_rel_k,"
                                                               "transformer_lstm_pos".split(","))
    parser.add_argument("--updates", type=positive_int)
    parser.add_argument("--seed", type=non_negative_int, default=1)
    parser.add_argument("--work-dir", type=folder)
    parser.add_argument("--out-dir", type=folder)
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS)
    parser.add_argument("--dry-run", action="store_true")
    add_launcher_options(parser)
    args = parser.parse_args(argv)
    smoke = os.environ.get("SMOKE", "0") == "1"
    base = "smoke/" if smoke else ""
    work = absolute(args.work_dir or REPO / "work" / f"{base}tatoeba-de-en")
    out = absolute(args.out_dir or REPO / "runs" / f"{base}tatoeba")
    prepare = ["--out-dir", str(work), "--max-len", str(TATOEBA_LIMIT), "--threads", str(args.threads)]
    model, translate_args, bootstrap, updates = list(TATOEBA_MODEL), [], 1000, args.updates or 2500
    if smoke:
        smoke_data = smoke_tatoeba_export(args)
        args.source = smoke_slice(smoke_data, work / "raw" / "slice.txt")
        prepare += SMOKE_TATOEBA_PREPARE
        model, translate_args, bootstrap = list(SMOKE_TRAIN), list(SMOKE_TRANSLATE), 50
        updates = args.updates or 16  # an explicit --updates is kept
        if not args.run_job:
            log(f"SMOKE=1: every 85th pair of {smoke_data}, tiny models (work: {work}, runs: {out})")
    prepare += ["--from", str(args.source)] if args.source else (["--download"] if args.download else [])
    if args.dry_run:
        prepare.append("--dry-run")
    prep_args = tatoeba_parser().parse_args(prepare)
    if not args.dry_run and not args.run_job:
        check_archs("--systems", args.systems)
    p = tatoeba_checked_preparation(prep_args)
    gpus = 0 if args.dry_run else visible_gpus() if args.launcher == "local" or args.run_job else args.slurm_gpus_per_job
    labels = {arch: arch for arch in args.systems}
    if _environment("TRAIN_EXTRA_ARGS"):
        labels = effective_labels(args.systems, _environment("TRAIN_EXTRA_ARGS"))
    folders = {arch: out / (arch if labels[arch] == arch else
                            f"{arch}-{hashlib.sha1(labels[arch].encode()).hexdigest()[:8]}") for arch in args.systems}
    for arch in args.systems:
        refuse_unless_ours(folders[arch], "train.done")
    jobs = [Job("prepare", merged(preparation_steps(p), testsets_graph(
        prepared_view(p), TATOEBA_SETS, lambda name: p.fetcher.testset(p, name), p.threads)), kind="prepare")]
    for arch in args.systems:
        save = folders[arch]
        training = train_options(
            ["--batch-tokens", "2048", "--lr", "1e-3", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "400",
             "--seed", str(args.seed), *model, "--max-update", str(updates), "--max-epochs", "1000", "--patience", "-1",
             "--num-workers", "0", *_environment("TRAIN_EXTRA_ARGS")],
            data=work / "data-bin" / f"len{TATOEBA_LIMIT}", arch=arch, save=save, n_shards=1)
        train = training.step(1 if gpus else 0, root=out, label=arch)
        train.cpus = args.threads if gpus else 1  # with a GPU, one after the other on it
        steps = [train]
        for test_set in TATOEBA_SETS:
            translation = Translation(checkpoint=save / "checkpoint_best.pt", testset=work / "testsets" / test_set,
                                      out=save / test_set, cpu=not gpus, extra=translate_args)
            step = translation.step(("de", "en"), root=out, label=arch, gpus=1 if gpus else 0)
            step.cpus = train.cpus
            steps.append(step)
        jobs.append(Job(arch, steps))
    failures = failures_of(jobs) if args.run_job else {}
    systems = {labels[arch]: folders[arch] for arch in args.systems}
    failed = {labels[arch]: why for arch, why in failures.items()}
    jobs.append(Job("reports", [_tatoeba_report(work, out, test_set, systems, failed, bootstrap, args.seed)
                                for test_set in TATOEBA_SETS], kind="report", after_any=True))
    launch = Launch("tatoeba", argv, args, roots=[work, out], threads=args.threads, gpus=gpus,
                    console=ProgressConsole())
    launch.run(jobs)
    if not args.dry_run and not args.run_job and (args.launcher == "local" or args.wait):
        for test_set in TATOEBA_SETS:
            print((out / "report" / test_set / "report.md").read_text(encoding="utf-8"))
        for test_set in TATOEBA_SETS:
            print(f"report: {out / 'report' / test_set} (report.md, report.json, buckets.png, lengths.png)")
    return 0


def _tatoeba_report(work: Path, out: Path, test_set: str, systems: Dict[str, Path], failures: Dict[str, str],
                    bootstrap: int, seed: int) -> Step:
    limit = TATOEBA_LIMIT
    edges = tatoeba_edges(test_set, limit)
    testset = work / "testsets" / test_set
    scored = [name for name in systems if name not in failures] or list(systems)
    hyps = [systems[name] / test_set / "hyp.txt" for name in scored]
    report = out / "report" / test_set
    command = [PY, "-m", "relpos_analysis.report", "--source", testset / "seg.de", "--length-file", testset / "longer-side",
               "--ref", testset / "raw.en", *[a for arch, hyp in zip(scored, hyps) for a in ("--system", f"{arch}={hyp}")],
               *[a for name, why in failures.items() for a in ("--failed", f"{name}={why}")],
               "--baseline", scored[0], "--tokenize", "13a", "--metrics", "bleu,ter", "--edges", edges,
               "--train-limit", limit, "--bootstrap", bootstrap, "--seed", seed,
               "--title", f"Tatoeba De-En, {test_set}: trained on pairs of up to {limit} subword tokens (length: longer side)",
               "--out-dir", OutDir(report)]
    return Step("report", command, home=report, root=out, echo=False, title=f"report {test_set}",
                inputs=[testset / "seg.de", testset / "longer-side", testset / "raw.en", *hyps])
