"""The study's tables (scripts/reproduce/table1.sh … table5.sh, relpos_recipes.graphs.study):
their plans in-process, as the command lines build them.  Per table its corpora, its systems
(architecture and training limit) with a training and translations each, and its reports as
later parts, each report listing the table's systems and those of --system.  One SMOKE=1 table
runs end to end in tests/recipes/test_pipelines.py (tests/cluster/test_slurm.py on SLURM)."""
import subprocess
import sys

import pytest

from recipe_graphs import recipe_graph, words
from relpos_recipes.engine.plan import plan
from relpos_recipes.graphs import study

EXTRA = ["--system", "NoPE@100=transformer_nope@100", "--system", "T5@75=transformer_t5@75"]

# per table: its pairs, the systems of its own (job names without the pair), per report its
# pair, test set and baseline
TABLES = {
    1: (["de-en", "zh-en"], ["transformer_abs-len100", "transformer_rel-len100"],
        {"table1-de-en": ("de-en", "newstest2018", "Absolute"), "table1-zh-en": ("zh-en", "newstest2019", "Absolute")}),
    2: (["de-en"], ["transformer_abs-len100", "transformer_rel-len100", "transformer_lstm_pos-len100",
                    "transformer_abs-len75", "transformer_rel-len75"],
        {"table2": ("de-en", "newstest_all", "Absolute@100")}),
    3: (["de-en"], ["transformer_abs-len100", "transformer_rel-len100", "transformer_abs-len75",
                    "transformer_rel-len75"],
        {"table3": ("de-en", "concat_seq", "Absolute@100")}),
    4: (["de-en"], ["transformer_rel-len100", "transformer_rel_sin-len100", "transformer_rel_k-len100",
                    "transformer_rel_abs-len100"],
        {"table4": ("de-en", "concat_seq", "Relative")}),
    5: (["de-en"], [f"{arch}-len{limit}" for limit in (100, 75) for arch in ("transformer_abs", "transformer_huang4",
                                                                            "transformer_shape")],
        {"table5-newstest_all": ("de-en", "newstest_all", "transformer_abs@100"),
         "table5-concat_seq": ("de-en", "concat_seq", "transformer_abs@100")}),
}


@pytest.fixture
def table(tmp_path, monkeypatch):
    """table(n, smoke) -> its graph, with --system NoPE@100 and T5@75; table 5, which takes
    every architecture of the plugin without --archs, with three for all of them."""
    monkeypatch.setattr(study, "all_archs", lambda: ["transformer_abs", "transformer_huang4", "transformer_shape"])

    def build(n, smoke):
        monkeypatch.setenv("SMOKE", smoke)
        for name in ("TRAIN_EXTRA_ARGS", "RELPOS_ARCH_OVERRIDE", "SKIP_REPORT", "REPORT_EXTRA_ARGS"):
            monkeypatch.delenv(name, raising=False)
        return recipe_graph(monkeypatch, f"table{n}", "--work-root", tmp_path / "w", "--runs-root", tmp_path / "r",
                            *EXTRA)

    return build


def option(step, name):
    argv = step.argv()
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("smoke", ["0", "1"])
@pytest.mark.parametrize("n", sorted(TABLES))
def test_a_table_plans_its_systems_their_translations_and_its_reports(table, tmp_path, n, smoke):
    graph = table(n, smoke)
    pairs, systems, reports = TABLES[n]
    root = tmp_path / "r" / ("smoke" if smoke == "1" else "")
    assert [job.name for job in graph.jobs if job.kind == "prepare"] == [f"prepare-{pair}" for pair in pairs]
    for pair in pairs:
        preparation = graph.job(f"prepare-{pair}")
        assert {f"bin.len{system.split('-len')[1]}" for system in systems} <= {s.name for s in preparation.steps}
        test_sets = {test_set for _, test_set, _ in reports.values()}
        assert any(s.name == "bin" and s.home.name in test_sets for s in preparation.steps)
    expected = [f"{pair}-{system}" for pair in pairs for system in [*systems, "transformer_nope-len100",
                                                                    "transformer_t5-len75"]]
    assert sorted(job.name for job in graph.jobs if job.kind == "system") == sorted(expected)
    for job in (job for job in graph.jobs if job.kind == "system"):
        train, *translations = job.steps
        arch, limit = job.name.split("-", 2)[2].split("-len")
        assert train.name == "train" and train.home == root / f"wmt19-{job.name[:5]}" / f"{arch}-len{limit}"
        assert train.argv()[1:3] == ["-m", "relpos_recipes.tools.fairseq_train"] and "fairseq-train" in train.argv()
        # what makes the model: its architecture, its data at its limit, the study's training
        identity = train.recorded_identity()
        assert identity[:2] == ["--arch", arch] and option(train, "--arch") == arch
        assert identity[identity.index("--data") + 1].endswith(f"data-bin/len{limit}")
        assert ("--encoder-layers 1" in words(train)) == (smoke == "1")
        assert {step.name for step in translations} == {"translate", "log-probs"}
        translate = next(step for step in translations if step.name == "translate")
        assert "relpos_recipes.tools.fairseq_generate" in translate.argv() and "fairseq-generate" in translate.argv()
        assert option(translate, "--path") == str(train.home / "checkpoint_best.pt") in map(str, translate.inputs)
    plan_ = plan(graph)
    assert all(plan_.states[step].reason == "not run before" for step in plan_.steps)
    # each report is a later part, built when its systems have run (those that failed listed, not scored)
    assert sorted(job.name for job in plan_.unbuilt) == sorted(f"report-{name}" for name in reports)
    for name, (pair, test_set, baseline) in reports.items():
        (report,) = graph.job(f"report-{name}").later.preview()
        assert report.argv()[1:3] == ["-m", "relpos_analysis.report"] and report.home == root / "reports" / name
        assert option(report, "--baseline") == baseline and option(report, "--title") == f"{name} ({pair}, {test_set})"
        labels = [part.split("=")[0] for part, before in zip(report.argv()[1:], report.argv()) if before == "--system"]
        assert labels[-2:] == ["NoPE@100", "T5@75"]
        assert f"T5@75={root}/wmt19-{pair}/transformer_t5-len75/{test_set}/hyp.txt" in words(report)
    assert not list(tmp_path.rglob("*")), "a plan writes nothing"


def test_the_architectures_of_table5_and_the_leaderboard_are_the_plugins():
    """What table5.sh (and the leaderboard) train without --archs (--systems): the tests above
    show that table 5 takes all_archs() then.  The recipes read the plugin's table by its
    file, without importing fairseq (a fresh interpreter shows it), and agree with the plugin:
    every one is registered with fairseq, and named as effective_label names it."""
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq_relpos import effective_label
    from fairseq_relpos.models.architectures import ARCHITECTURES

    assert study.all_archs() == list(ARCHITECTURES) and set(ARCHITECTURES) < set(ARCH_MODEL_REGISTRY)
    archs = [*ARCHITECTURES, "relpos_transformer"]
    for extra in ([], ["--lr", "1e-3", "--encoder-posx", "alibi"], ["--encoder-pos=rope"],
                  ["--max-relative-position", "8"]):
        assert study.effective_labels(archs, extra) == {arch: effective_label(arch, extra) for arch in archs}, extra
    code = ("import sys; from relpos_recipes.graphs.archs import all_archs, check_archs, effective_labels\n"
            "check_archs('--systems', [*all_archs(), 'relpos_transformer'])\n"
            "labels = effective_labels(all_archs(), ['--lr', '1e-3'])\n"
            "print(len(labels), 'fairseq' in sys.modules or 'torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split() == \
        [str(len(ARCHITECTURES)), "False"]
