"""The reproduction recipes: the study's tables 1-4 and table 5 (every scheme) on WMT19, and
the Tatoeba study.  Each is one graph: the data of each pair, then per system its training
and its translations, then the reports.  A report is a job's later part: it is built once its
systems have finished, and lists those that failed instead of scoring them."""
import dataclasses
import hashlib
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..engine import (Display, Graph, Job, Later, Launch, Out, OutDir, ProgressConsole, Step, StepError,
                      add_launcher_options, run, unfinished, unique_steps)
from ..engine.step import REPO
from . import tool
from .archs import all_archs, check_archs, effective_labels
from .data import Preparation, preparation_and_test_sets, refuse_foreign_work, wmt_fetcher
from .environment import RECIPE_ENVIRONMENT, RecipeEnvironment
from .options import (DEFAULT_THREADS, Parser, absolute, folder, log, name_list, non_negative_int,
                      positive_int)
from .prepare import (SMOKE_TATOEBA_PREPARE, local_dir, smoke_slice, smoke_tatoeba_export,
                      tatoeba_export, tatoeba_pairs_sha, tatoeba_parser, tatoeba_preparation, wmt_pair)
from .presets import (SMOKE_TEST_LINES, SMOKE_TRAIN, SMOKE_TRANSLATE, TATOEBA_LIMIT, TATOEBA_MODEL, TATOEBA_SETS,
                      WMT_SHARDS, tatoeba_edges)
from ..tools import option_value
from .reports import oracle_folder, system_options
from .systems import print_outputs, refuse_unless_ours
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
    environment: RecipeEnvironment
    work_root: Path
    runs_root: Path
    local_dirs: List[Path]
    offline: bool
    threads: int
    gpus: int
    oracle: bool = False  # each model also decodes with its references' lengths

    @property
    def smoke(self) -> bool:
        return self.environment.smoke

    @property
    def smoke_data(self) -> Path:
        """SMOKE=1's small local data, laid out like wmt-newstest: SMOKE_DATA, by default ../shared's."""
        return self.environment.smoke_data or REPO.parent / "shared" / "data" / "wmt-newstest"

    @property
    def user_dir(self) -> str:
        """The plugin the models load: what TRAIN_EXTRA_ARGS says, or ours."""
        return option_value(self.environment.train_extra_args, "--user-dir") or "fairseq_relpos"

    def prep_dir(self, pair: str) -> Path:
        return self.work_root / f"wmt19-{pair}"


def table_main(n: int, argv: Sequence[str]) -> int:
    parser = Parser(f"table{n}.sh")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--work-root", type=folder, default=REPO / "work")
    parser.add_argument("--runs-root", type=folder, default=REPO / "runs")
    parser.add_argument("--local-dir", type=local_dir, action="append", default=[])
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--system", action="append", default=[])
    parser.add_argument("--threads", type=positive_int, default=DEFAULT_THREADS)
    parser.add_argument("--oracle-length", action="store_true")
    add_launcher_options(parser)
    if n == 5:
        parser.add_argument("--archs", type=name_list)
    args = parser.parse_args(argv)
    environment = RecipeEnvironment.read()
    smoke = environment.smoke
    run_ = StudyRun(environment=environment, work_root=absolute(args.work_root), runs_root=absolute(args.runs_root),
                    local_dirs=[absolute(d) for d in args.local_dir], offline=args.offline, threads=args.threads,
                    gpus=0, oracle=args.oracle_length)
    if smoke:
        run_.work_root, run_.runs_root = run_.work_root / "smoke", run_.runs_root / "smoke"
        if not args.dry_run and not run_.smoke_data.is_dir():
            raise StepError(f"SMOKE=1 needs a small local data directory laid out like wmt-newstest "
                            f"(de-en/newstestYYYY.{{de,en}}, zh-en/newstestYYYY.{{zh,en}}); set SMOKE_DATA "
                            f"(tried {run_.smoke_data})")
        if not args.run_job:
            log(f"SMOKE=1: tiny data and models (work: {run_.work_root}, runs: {run_.runs_root})")
    extra = [_extra_system(text) for text in args.system]
    override = environment.arch_override
    archs = (args.archs or all_archs()) if n == 5 else []
    if not args.dry_run and not args.run_job:
        if extra:
            check_archs("--system", [s.arch for s in extra])
        if override:
            check_archs("RELPOS_ARCH_OVERRIDE", [override])
        if n == 5 and args.archs:
            check_archs("--archs", archs)
    if args.run_job:
        run_.gpus = visible_gpus()
    elif args.launcher == "slurm":
        run_.gpus = args.slurm_gpus_per_job
    elif not args.dry_run:
        run_.gpus = visible_gpus()
    reports = _table(n, archs)
    for report in reports:
        report.systems += extra
    _label_by_effective_specs(reports, override, environment.train_extra_args)
    launch = Launch.from_args(f"table{n}", argv, args, threads=run_.threads, gpus=run_.gpus,
                              environment=RECIPE_ENVIRONMENT)
    run(study_graph(run_, reports, override), launch)
    if launch.finishes_here and not environment.skip_report:
        for report in reports:
            print((run_.runs_root / "reports" / report.name / "report.md").read_text(encoding="utf-8"))
        for report in reports:
            print(f"report: {run_.runs_root / 'reports' / report.name}/report.md")
    return 0


def _label_by_effective_specs(reports: Sequence[Report], override: str, extra: Sequence[str]) -> None:
    """Systems that TRAIN_EXTRA_ARGS (``extra``) gives other position schemes than their
    architecture's are labelled, and saved, as what they are."""
    if not extra:
        return
    systems = [s for r in reports for s in r.systems]
    labels = effective_labels(sorted({override or s.arch for s in systems}), extra)
    for system in systems:
        arch = override or system.arch
        if labels[arch] != arch:
            system.label += f" ({labels[arch]})"
            system.variant = hashlib.sha1(labels[arch].encode()).hexdigest()[:8]


def study_graph(run_: StudyRun, reports: Sequence[Report], override: str) -> Graph:
    """Per pair its data, per system (architecture and training limit) its training and its
    translations of the test sets of the reports it is in, per report the report, built once
    its systems have finished: those that failed are listed under the table, not scored."""
    jobs: List[Job] = []
    for pair in dict.fromkeys(r.pair for r in reports):
        mine = [r for r in reports if r.pair == pair]
        limits = sorted({s.limit for r in mine for s in r.systems}, key=lambda x: (x != 100, -x))
        sets = list(dict.fromkeys(r.test_set for r in mine))
        jobs.append(Job(f"prepare-{pair}", _pair_steps(run_, pair, limits, sets), kind="prepare"))
        systems: Dict[str, Job] = {}
        for report in mine:
            for system in report.systems:
                arch = override or system.arch
                save = run_.runs_root / f"wmt19-{pair}" / system.folder(arch)
                name = f"{pair}-{save.name}"
                job = systems.get(name) or Job(name, [_train_step(run_, pair, arch, system.limit, save)])
                systems[name] = job
                if not any(step.home == save / report.test_set for step in job.steps):
                    job.steps = [*job.steps, *_translate_steps(run_, pair, save, report.test_set)]
        jobs += systems.values()
        if run_.environment.skip_report:
            continue
        for report in mine:
            entries = []
            for system in report.systems:
                save = run_.runs_root / f"wmt19-{pair}" / system.folder(override or system.arch)
                job = systems[f"{pair}-{save.name}"]
                # what the report needs of the system: its training and its translations of the report's set
                homes = (save, save / report.test_set, oracle_folder(save, report.test_set))
                needed = [step for step in job.steps if step.home in homes]
                entries.append((system.label, save, job, needed))
            jobs.append(Job(f"report-{report.name}", waits_for=list(dict.fromkeys(e[2] for e in entries)),
                            kind="report", after_any=True, later=Later(
                                lambda report=report, entries=entries: [_report_step(
                                    run_, report, [(label, out, unfinished(needed)) for label, out, _, needed in entries])],
                                f"the report {report.name}",
                                preview=lambda report=report, entries=entries: [_report_step(
                                    run_, report, [(label, out, None) for label, out, _, _ in entries])])))
    return Graph(jobs, roots=[run_.work_root, run_.runs_root])


def _pair_steps(run: StudyRun, pair: str, limits: Sequence[int], sets: Sequence[str]) -> List[Step]:
    spec = wmt_pair(pair)
    local_dirs, offline, standin = list(run.local_dirs), run.offline, []
    seg_size, threads = spec["seg_size"], run.threads
    if run.smoke:
        folder_ = run.work_root / f"standin-{pair}"
        for name, source, first, last in SMOKE_STANDIN[pair]:
            for lang in (spec["src"], spec["tgt"]):
                standin.append(Step(f"{name}.{lang}", [tool("cut-lines"), "--input",
                                                        run.smoke_data / pair / f"{source}.{lang}", "--first", first,
                                                        "--last", last, "--out", Out(folder_ / f"{name}.{lang}")],
                                    home=folder_, inputs=[run.smoke_data / pair / f"{source}.{lang}"],
                                    display=Display(title=f"SMOKE stand-in {name}.{lang}")))
        local_dirs, offline, seg_size = [folder_], True, SMOKE_SEGMENTATION[pair]
    p = Preparation(work=run.prep_dir(pair), pair=pair, src=spec["src"], tgt=spec["tgt"], title=spec["title"],
                    textproc=spec["textproc"], seg=spec["seg"], seg_size=seg_size, corpora=spec["corpora"],
                    dev_sets=spec["dev_sets"], test_set=spec["test_set"], lens=list(limits), shards=WMT_SHARDS,
                    fetcher=wmt_fetcher(local_dirs, offline), default_test_sets=spec["default_test_sets"],
                    concat_of=spec["concat_of"], threads=threads)
    return unique_steps(standin, preparation_and_test_sets(p, sets))


def _train_step(run: StudyRun, pair: str, arch: str, limit: int, save: Path) -> Step:
    train_args = [*(SMOKE_TRAIN if run.smoke else ()), *run.environment.train_extra_args]
    training = train_options(train_args, data=run.prep_dir(pair) / "data-bin" / f"len{limit}", arch=arch, save=save,
                             n_shards=WMT_SHARDS)
    tasks = int(os.environ.get("SLURM_NTASKS", "1")) if os.environ.get("SLURM_JOB_ID") else 1
    # with GPUs, one training at a time, on every GPU
    return training.step(1 if tasks > 1 and run.gpus else run.gpus, root=run.runs_root, label=save.name,
                         tasks=tasks, srun=True, cpus=run.threads if run.gpus else 1)


def _translate_steps(run: StudyRun, pair: str, save: Path, test_set: str) -> List[Step]:
    """SAVE's model translating a test set (and with --oracle-length, decoding it with the
    references' lengths too), and the log-probabilities of each."""
    spec, steps = wmt_pair(pair), []
    for oracle, out in ((False, save / test_set), (True, oracle_folder(save, test_set)))[:1 + run.oracle]:
        translation = Translation(checkpoint=save / "checkpoint_best.pt", out=out, cpu=not run.gpus,
                                  testset=run.prep_dir(pair) / "testsets" / test_set, oracle=oracle,
                                  extra=list(SMOKE_TRANSLATE) if run.smoke else [], user_dir=run.user_dir)
        steps += translation.steps((spec["src"], spec["tgt"]), root=run.runs_root, label=save.name,
                                   gpus=1 if run.gpus else 0, cpus=run.threads if run.gpus else 1)
    return steps


def _report_step(run: StudyRun, report: Report, systems: Sequence[Tuple[str, Path, Optional[str]]]) -> Step:
    """Scored with sacreBLEU's 13a tokenization of the detokenized output against the raw
    references (REPORT_TOKENIZE=none: the Moses-tokenized output against the Moses-tokenized
    references, the study's "BLEU on tokenized text"; meaningful for De->En).  ``systems``:
    (label, model folder, why it failed or None)."""
    spec = wmt_pair(report.pair)
    testset = run.prep_dir(report.pair) / "testsets" / report.test_set
    tokenize = run.environment.report_tokenize
    hyp, ref = ("hyp.tok", testset / f"tok.{spec['tgt']}") if tokenize == "none" else ("hyp.txt", testset / f"raw.{spec['tgt']}")
    scored = {label: [save] for label, save, failure in systems if not failure}
    named, read = system_options(scored, report.test_set, run.oracle, hypotheses=hyp)
    failed = [a for label, _, failure in systems if failure for a in ("--failed", f"{label}={failure}")]
    baseline = report.baseline if report.baseline in scored or not scored else next(iter(scored))
    out = run.runs_root / "reports" / report.name
    command = [tool("report"), "--source", testset / f"seg.{spec['src']}", "--ref", ref, *named, *failed,
               *(["--bootstrap", "50"] if run.smoke else []), *run.environment.report_extra_args,
               "--baseline", baseline, "--edges", "25,50,75,100", "--train-limit", "100",
               "--tokenize", tokenize, "--title", f"{report.name} ({report.pair}, {report.test_set})",
               "--out-dir", OutDir(out)]
    return Step("report", command, home=out, root=run.runs_root, inputs=[testset / f"seg.{spec['src']}", ref, *read],
                display=Display(echo=False, title=f"report {report.name}"))


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
    parser.add_argument("--oracle-length", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    add_launcher_options(parser)
    args = parser.parse_args(argv)
    environment = RecipeEnvironment.read()
    smoke = environment.smoke
    base = "smoke/" if smoke else ""
    work = absolute(args.work_dir or REPO / "work" / f"{base}tatoeba-de-en")
    out = absolute(args.out_dir or REPO / "runs" / f"{base}tatoeba")
    prepare = ["--out-dir", str(work), "--max-len", str(TATOEBA_LIMIT), "--threads", str(args.threads)]
    model, translate_args, bootstrap, updates = list(TATOEBA_MODEL), [], 1000, args.updates or 2500
    if smoke:
        smoke_data = smoke_tatoeba_export(args, environment.smoke_data)
        args.source = work / "raw" / "slice.txt"
        if not args.run_job and not args.dry_run:
            smoke_slice(smoke_data, args.source)
            log(f"SMOKE=1: every 85th pair of {smoke_data}, tiny models (work: {work}, runs: {out})")
        prepare += SMOKE_TATOEBA_PREPARE
        model, translate_args, bootstrap = list(SMOKE_TRAIN), list(SMOKE_TRANSLATE), 50
        updates = args.updates or 16  # an explicit --updates is kept
    prepare += ["--from", str(args.source)] if args.source else (["--download"] if args.download else [])
    prep_args = tatoeba_parser().parse_args([*prepare, *(["--dry-run"] if args.dry_run else [])])
    if not args.dry_run and not args.run_job:
        check_archs("--systems", args.systems)
    if not args.run_job:
        refuse_foreign_work(work)
    export = tatoeba_export(prep_args, fetch=not args.run_job)
    p = tatoeba_preparation(prep_args, export, tatoeba_pairs_sha(export, args.dry_run))
    gpus = 0 if args.dry_run else visible_gpus() if args.launcher == "local" or args.run_job else args.slurm_gpus_per_job
    labels = {arch: arch for arch in args.systems}
    if environment.train_extra_args:
        labels = effective_labels(args.systems, environment.train_extra_args)
    folders = {arch: out / (arch if labels[arch] == arch else
                            f"{arch}-{hashlib.sha1(labels[arch].encode()).hexdigest()[:8]}") for arch in args.systems}
    if not args.run_job:
        for arch in args.systems:
            refuse_unless_ours(folders[arch], "reproduce/tatoeba.sh")
    jobs = [Job("prepare", preparation_and_test_sets(p, TATOEBA_SETS), kind="prepare")]
    cpus = args.threads if gpus else 1  # with a GPU, one after the other on it
    for arch in args.systems:
        save = folders[arch]
        training = train_options(
            ["--batch-tokens", "2048", "--lr", "1e-3", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "400",
             "--seed", str(args.seed), *model, "--max-update", str(updates), "--max-epochs", "1000", "--patience", "-1",
             "--num-workers", "0", *environment.train_extra_args],
            data=work / "data-bin" / f"len{TATOEBA_LIMIT}", arch=arch, save=save, n_shards=1)
        steps = [training.step(1 if gpus else 0, root=out, label=arch, cpus=cpus)]
        for test_set in TATOEBA_SETS:
            for oracle, folder_ in ((False, save / test_set), (True, oracle_folder(save, test_set)))[:1 + args.oracle_length]:
                translation = Translation(checkpoint=save / "checkpoint_best.pt", testset=work / "testsets" / test_set,
                                          out=folder_, cpu=not gpus, extra=translate_args, oracle=oracle,
                                          user_dir=training.user_dir)
                steps += translation.steps(("de", "en"), root=out, label=arch, gpus=1 if gpus else 0, cpus=cpus)
        jobs.append(Job(arch, steps))
    systems = [job for job in jobs if job.kind == "system"]

    def reports() -> List[Step]:
        failed = {labels[job.name]: why for job in systems if (why := unfinished(job.steps))}
        scored = {labels[arch]: folders[arch] for arch in args.systems}
        return [_tatoeba_report(work, out, test_set, scored, failed, bootstrap, args.seed, args.oracle_length)
                for test_set in TATOEBA_SETS]

    jobs.append(Job("reports", waits_for=systems, kind="report", after_any=True,
                    later=Later(reports, "the reports", preview=lambda: [
                        _tatoeba_report(work, out, test_set, {labels[a]: folders[a] for a in args.systems}, {},
                                        bootstrap, args.seed, args.oracle_length) for test_set in TATOEBA_SETS])))
    launch = Launch.from_args("tatoeba", argv, args, threads=args.threads, gpus=gpus, console=ProgressConsole(),
                              environment=RECIPE_ENVIRONMENT)
    run(Graph(jobs, roots=[work, out]), launch)
    if launch.finishes_here:
        print_outputs(out / "report", TATOEBA_SETS, "report.md", "report.md, report.json, buckets.png, lengths.png")
    return 0


def _tatoeba_report(work: Path, out: Path, test_set: str, systems: Dict[str, Path], failures: Dict[str, str],
                    bootstrap: int, seed: int, oracle: bool) -> Step:
    limit = TATOEBA_LIMIT
    edges = tatoeba_edges(test_set, limit)
    testset = work / "testsets" / test_set
    scored = {name: [folder] for name, folder in systems.items() if name not in failures} or \
        {name: [folder] for name, folder in systems.items()}
    named, read = system_options(scored, test_set, oracle)
    report = out / "report" / test_set
    command = [tool("report"), "--source", testset / "seg.de", "--length-file", testset / "longer-side",
               "--ref", testset / "raw.en", *named,
               *[a for name, why in failures.items() for a in ("--failed", f"{name}={why}")],
               "--baseline", next(iter(scored)), "--tokenize", "13a", "--metrics", "bleu,ter", "--edges", edges,
               "--train-limit", limit, "--bootstrap", bootstrap, "--seed", seed,
               "--title", f"Tatoeba De-En, {test_set}: trained on pairs of up to {limit} subword tokens (length: longer side)",
               "--out-dir", OutDir(report)]
    return Step("report", command, home=report, root=out,
                inputs=[testset / "seg.de", testset / "longer-side", testset / "raw.en", *read],
                display=Display(echo=False, title=f"report {test_set}"))
