"""The reproduction recipes: the study's tables 1-4 and table 5 (every scheme) on WMT19, and
the Tatoeba study.  Each is one graph: the data of each pair, then per system its training
and its translations, then the reports."""
import dataclasses
import os
import shlex
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .cli import (DEFAULT_THREADS, Parser, absolute, command_line, folder, log, name_list, non_negative_int,
                  positive_int, run_steps)
from .data import PY, TOOLS, Preparation, preparation_steps, testsets_graph, wmt_fetcher
from .demo import all_archs, check_archs, refuse_unless_ours
from .engine import OutDir, Step, StepError, merged
from .prepare import REPO, WMT, length_list, local_dir, prepared_view, tatoeba_checked_preparation, tatoeba_parser, \
    print_testsets
from .training import Translation, train_options, visible_gpus

# Tiny settings for SMOKE=1: the same steps on a few thousand lines, with 1+1-layer models.
SMOKE_TRAIN = ("--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
               "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
               "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--max-update", "16",
               "--batch-tokens", "1200", "--log-interval", "5")
SMOKE_TRANSLATE = ("--beam", "2", "--max-tokens", "30000", "--max-len-a", "1.2", "--max-len-b", "5")
SMOKE_TEST_LINES = 30
WMT_SHARDS = 8  # prepare-wmt19-*.sh's default: 8 checkpoints and dev evaluations per epoch
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
        log(f"SMOKE=1: tiny data and models (work: {run.work_root}, runs: {run.runs_root})")
    extra = [_extra_system(text) for text in args.system]
    override = os.environ.get("RELPOS_ARCH_OVERRIDE", "")
    archs = []
    if n == 5:
        archs = args.archs or all_archs()
    if not args.dry_run:
        if extra:
            check_archs("--system", [s.arch for s in extra])
        if override:
            check_archs("RELPOS_ARCH_OVERRIDE", [override])
        if n == 5 and args.archs:
            check_archs("--archs", archs)
        run.gpus = visible_gpus()
    reports = _table(n, archs)
    for report in reports:
        report.systems += extra
    steps = study_steps(run, reports, override)
    run_steps(steps, threads=run.threads, gpus=run.gpus, dry_run=run.dry_run,
              lock=[run.work_root, run.runs_root], what=command_line(f"reproduce/table{n}.sh", argv))
    if not run.dry_run and os.environ.get("SKIP_REPORT") != "1":
        for report in reports:
            print((run.runs_root / "reports" / report.name / "report.md").read_text(encoding="utf-8"))
        for report in reports:
            print(f"report: {run.runs_root / 'reports' / report.name}/report.md")
    return 0


def study_steps(run: StudyRun, reports: Sequence[Report], override: str) -> List[Step]:
    steps: List[List[Step]] = []
    for pair in dict.fromkeys(r.pair for r in reports):
        mine = [r for r in reports if r.pair == pair]
        limits = sorted({s.limit for r in mine for s in r.systems}, key=lambda x: (x != 100, -x))
        sets = list(dict.fromkeys(r.test_set for r in mine))
        steps.append(_pair_steps(run, pair, limits, sets))
        for report in mine:
            systems = []
            for system in report.systems:
                arch = override or system.arch
                save = run.runs_root / f"wmt19-{pair}" / f"{arch}-len{system.limit}"
                steps.append(_system_steps(run, pair, arch, system.limit, save, report.test_set))
                systems.append((system.label, save / report.test_set))
            if os.environ.get("SKIP_REPORT") != "1":
                steps.append([_report_step(run, report, systems)])
    return merged(*steps)


def _pair_steps(run: StudyRun, pair: str, limits: Sequence[int], sets: Sequence[str]) -> List[Step]:
    spec = WMT[pair]
    local_dirs, offline, standin = list(run.local_dirs), run.offline, []
    seg_size, threads = spec["seg_size"], run.threads
    if run.smoke:
        folder_ = run.work_root / f"standin-{pair}"
        for name, source, first, last in SMOKE_STANDIN[pair]:
            for lang in (spec["src"], spec["tgt"]):
                standin.append(Step(f"{name}.{lang}", [*TOOLS, "cut-lines", "--input",
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
    from .engine import Out

    return Out(path)


def _system_steps(run: StudyRun, pair: str, arch: str, limit: int, save: Path, test_set: str) -> List[Step]:
    train_args = (list(SMOKE_TRAIN) if run.smoke else []) + _environment("TRAIN_EXTRA_ARGS")
    training = train_options(train_args, data=run.prep_dir(pair) / "data-bin" / f"len{limit}", arch=arch, save=save,
                             n_shards=WMT_SHARDS)
    on_gpu = run.gpus > 0
    train = training.step(run.gpus, root=run.runs_root, label=save.name)
    if on_gpu:
        train.cpus = run.threads  # one training at a time, on every GPU
    translation = Translation(checkpoint=save / "checkpoint_best.pt", testset=run.prep_dir(pair) / "testsets" / test_set,
                              out=save / test_set, cpu=not on_gpu,
                              extra=list(SMOKE_TRANSLATE) if run.smoke else [])
    translate = translation.step((WMT[pair]["src"], WMT[pair]["tgt"]), root=run.runs_root, label=save.name,
                                 gpus=1 if on_gpu else 0)
    if on_gpu:
        translate.cpus = run.threads
    return [train, translate]


def _report_step(run: StudyRun, report: Report, systems: Sequence[Tuple[str, Path]]) -> Step:
    """Scored with sacreBLEU's 13a tokenization of the detokenized output against the raw
    references (REPORT_TOKENIZE=none: the Moses-tokenized output against the Moses-tokenized
    references, the study's "BLEU on tokenized text"; meaningful for De->En)."""
    spec = WMT[report.pair]
    testset = run.prep_dir(report.pair) / "testsets" / report.test_set
    tokenize = os.environ.get("REPORT_TOKENIZE", "13a")
    hyp, ref = ("hyp.tok", testset / f"tok.{spec['tgt']}") if tokenize == "none" else ("hyp.txt", testset / f"raw.{spec['tgt']}")
    hyps = [(label, out / hyp) for label, out in systems]
    out = run.runs_root / "reports" / report.name
    command = [PY, "-m", "analysis.report", "--source", testset / f"seg.{spec['src']}", "--ref", ref,
               *[a for label, path in hyps for a in ("--system", f"{label}={path}")],
               *(["--bootstrap", "50"] if run.smoke else []), *_environment("REPORT_EXTRA_ARGS"),
               "--baseline", report.baseline, "--edges", "25,50,75,100", "--train-limit", "100",
               "--tokenize", tokenize, "--title", f"{report.name} ({report.pair}, {report.test_set})",
               "--out-dir", OutDir(out)]
    return Step("report", command, home=out, root=run.runs_root, echo=False, title=f"report {report.name}",
                inputs=[testset / f"seg.{spec['src']}", ref, *[path for _, path in hyps]])


# ----------------------------------------------------------------------------------------
# reproduce/tatoeba.sh
# ----------------------------------------------------------------------------------------
TATOEBA_SETS = ("test", "concat_seq", "concat3_seq")
TATOEBA_MODEL = ("--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "256",
                 "--decoder-embed-dim", "256", "--encoder-ffn-embed-dim", "1024", "--decoder-ffn-embed-dim", "1024",
                 "--encoder-attention-heads", "4", "--decoder-attention-heads", "4", "--dropout", "0.1",
                 "--share-decoder-input-output-embed")
TATOEBA_LIMIT = 16


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
    args = parser.parse_args(argv)
    smoke = os.environ.get("SMOKE", "0") == "1"
    base = "smoke/" if smoke else ""
    work = absolute(args.work_dir or REPO / "work" / f"{base}tatoeba-de-en")
    out = absolute(args.out_dir or REPO / "runs" / f"{base}tatoeba")
    prepare = ["--out-dir", str(work), "--max-len", str(TATOEBA_LIMIT), "--threads", str(args.threads)]
    model, translate_args, bootstrap, updates = list(TATOEBA_MODEL), [], 1000, args.updates or 2500
    if smoke:
        if args.source or args.download:
            raise StepError("SMOKE=1 takes its data from SMOKE_DATA, not --from/--download")
        smoke_data = Path(os.environ.get("SMOKE_DATA", REPO.parent / "shared" / "data" / "tatoeba-deu-eng" / "deu.txt"))
        if not smoke_data.is_file():
            raise StepError(f"SMOKE=1 needs the Tatoeba deu.txt; set SMOKE_DATA (tried {smoke_data})")
        args.source = _smoke_slice(smoke_data, work / "raw" / "slice.txt")
        prepare += ["--dev-pairs", "100", "--test-short-pairs", "100", "--bpe-merges", "500"]
        model, translate_args, bootstrap = list(SMOKE_TRAIN), list(SMOKE_TRANSLATE), 50
        updates = args.updates or 16  # an explicit --updates is kept
        log(f"SMOKE=1: every 85th pair of {smoke_data}, tiny models (work: {work}, runs: {out})")
    prepare += ["--from", str(args.source)] if args.source else (["--download"] if args.download else [])
    if args.dry_run:
        prepare.append("--dry-run")
    prep_args = tatoeba_parser().parse_args(prepare)
    if not args.dry_run:
        check_archs("--systems", args.systems)
    p = tatoeba_checked_preparation(prep_args)
    gpus = 0 if args.dry_run else visible_gpus()
    for arch in args.systems:
        refuse_unless_ours(out / arch, "train.done")
    steps = [*preparation_steps(p), *testsets_graph(prepared_view(p), TATOEBA_SETS,
                                                    lambda name: p.fetcher.testset(p, name), p.threads)]
    for arch in args.systems:
        save = out / arch
        training = train_options(
            ["--batch-tokens", "2048", "--lr", "1e-3", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "400",
             "--seed", str(args.seed), *model, "--max-update", str(updates), "--max-epochs", "1000", "--patience", "-1",
             "--num-workers", "0", *_environment("TRAIN_EXTRA_ARGS")],
            data=work / "data-bin" / f"len{TATOEBA_LIMIT}", arch=arch, save=save, n_shards=1)
        train = training.step(1 if gpus else 0, root=out, label=arch)
        train.cpus = args.threads if gpus else 1  # with a GPU, one after the other on it
        steps.append(train)
        for test_set in TATOEBA_SETS:
            translation = Translation(checkpoint=save / "checkpoint_best.pt", testset=work / "testsets" / test_set,
                                      out=save / test_set, cpu=not gpus, extra=translate_args)
            step = translation.step(("de", "en"), root=out, label=arch, gpus=1 if gpus else 0)
            step.cpus = train.cpus
            steps.append(step)
    for test_set in TATOEBA_SETS:
        steps.append(_tatoeba_report(work, out, test_set, args.systems, bootstrap, args.seed))
    run_steps(merged(steps), threads=args.threads, gpus=gpus, dry_run=args.dry_run, lock=[work, out],
              what=command_line("reproduce/tatoeba.sh", argv))
    if not args.dry_run:
        for test_set in TATOEBA_SETS:
            print((out / "report" / test_set / "report.md").read_text(encoding="utf-8"))
        for test_set in TATOEBA_SETS:
            print(f"report: {out / 'report' / test_set} (report.md, report.json, buckets.png, lengths.png)")
    return 0


def _smoke_slice(export: Path, slice_path: Path) -> Path:
    """Every 85th pair of the export, in WORK/raw where a preparation expects corpora placed
    beforehand."""
    slice_path.parent.mkdir(parents=True, exist_ok=True)
    with open(export, encoding="utf-8", newline="\n") as f:
        rows = [line for k, line in enumerate(f, start=1) if k % 85 == 0]
    temp = slice_path.with_name(f".tmp.{os.getpid()}.{slice_path.name}")
    temp.write_text("".join(rows), encoding="utf-8", newline="\n")
    if slice_path.exists() and slice_path.read_bytes() == temp.read_bytes():
        temp.unlink()
    else:
        os.replace(temp, slice_path)
    return slice_path


def _tatoeba_report(work: Path, out: Path, test_set: str, systems: Sequence[str], bootstrap: int, seed: int) -> Step:
    limit = TATOEBA_LIMIT
    edges = (f"{limit},{limit * 3 // 2},{limit * 2},{limit * 3}" if test_set == "test"
             else f"{limit},{limit * 2},{limit * 3},{limit * 4}")
    testset = work / "testsets" / test_set
    hyps = [out / arch / test_set / "hyp.txt" for arch in systems]
    report = out / "report" / test_set
    command = [PY, "-m", "analysis.report", "--source", testset / "seg.de", "--length-file", testset / "longer-side",
               "--ref", testset / "raw.en", *[a for arch, hyp in zip(systems, hyps) for a in ("--system", f"{arch}={hyp}")],
               "--baseline", systems[0], "--tokenize", "13a", "--metrics", "bleu,ter", "--edges", edges,
               "--train-limit", limit, "--bootstrap", bootstrap, "--seed", seed,
               "--title", f"Tatoeba De-En, {test_set}: trained on pairs of up to {limit} subword tokens (length: longer side)",
               "--out-dir", OutDir(report)]
    return Step("report", command, home=report, root=out, echo=False, title=f"report {test_set}",
                inputs=[testset / "seg.de", testset / "longer-side", testset / "raw.en", *hyps])
