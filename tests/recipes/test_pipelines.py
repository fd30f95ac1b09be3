"""The data pipelines on real text, through their scripts, and the helpers the recipes' tests
share (SCRIPTS, run, lines).  On the newstest data in ../shared/data/wmt-newstest (skipped when
it is absent): the De->En preparation offline end to end, the test sets on the real data
(28,075 / 14,038 pairs), the Zh->En SentencePiece path on a small Chinese sample, and one
SMOKE=1 table to its report (the other tables' plans: test_study.py).  The synthetic pair
through prepare-toy.sh and build-test-sets.sh.  train.sh and translate.sh: test_train_translate.py;
the scripts' command lines: test_recipes.py; the WMT corpora's readers: test_wmt_sources.py.
"""
import json
import re
import sys
import unicodedata
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SHARED, local_slurm, run_command as run
from recipe_graphs import recipe_graph
from relpos_recipes.graphs.presets import SMOKE_TEST_LINES

REPO = REPO_ROOT
SCRIPTS = REPO / "scripts"
NEWSTEST = SHARED / "data" / "wmt-newstest"
DEEN = NEWSTEST / "de-en"
ZHEN = NEWSTEST / "zh-en"


def lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def need(path):
    if not Path(path).is_dir():
        pytest.skip(f"shared newstest data not available ({path})")


def tool(*args, cwd=REPO, check=True):
    return run([sys.executable, "-m", "relpos_recipes.tools.text", *map(str, args)], cwd=cwd, check=check)


# ----------------------------------------------------------------------------------------
# De->En on real text
# ----------------------------------------------------------------------------------------
STANDIN_DEEN = {"commoncrawl.de-en": 2008, "europarl-v9.de-en": 2009,
                "news-commentary-v14.de-en": 2010, "rapid2019.de-en": 2011}
STANDIN_LINES = 1500
MAX_LENS = (100, 75)


@pytest.fixture(scope="module")
def deen(tmp_path_factory):
    need(DEEN)
    root = tmp_path_factory.mktemp("deen")
    standin = root / "standin"
    standin.mkdir()
    for name, year in STANDIN_DEEN.items():  # the first 1,500 lines of four years
        for lang in ("de", "en"):
            text = lines(DEEN / f"newstest{year}.{lang}")[:STANDIN_LINES]
            (standin / f"{name}.{lang}").write_text("\n".join(text) + "\n", encoding="utf-8")
    work = root / "work"
    cmd = ["bash", SCRIPTS / "prepare-wmt19-de-en.sh", "--work-dir", work, "--local-dir",
           standin, "--local-dir", DEEN, "--offline", "--bpe-merges", "500",
           "--max-len", ",".join(map(str, MAX_LENS))]
    proc = run(cmd)
    return {"work": work, "proc": proc, "cmd": cmd}


@pytest.mark.slow
@pytest.mark.xdist_group("deen")  # one worker: the preparation is made once
def test_deen_preparation_end_to_end(deen):
    work = deen["work"]
    raw_total = len(STANDIN_DEEN) * STANDIN_LINES
    # tokenized (sacremoses: "-" split aggressively, XML escaping), then BPE
    tok = lines(work / "text" / "train.de")
    assert len(tok) == raw_total
    assert any(" @-@ " in t for t in tok) and any("&quot;" in t or "&apos;" in t for t in tok)
    seg_de, seg_en = lines(work / "seg" / "train.de"), lines(work / "seg" / "train.en")
    assert len(seg_de) == len(seg_en) == len(lines(work / "text" / "train.clean.de"))
    assert any("@@ " in s for s in seg_de)
    assert (work / "dict" / "dict.de.txt").stat().st_size > 0
    for n in MAX_LENS:
        kept = sum(1 for s, t in zip(seg_de, seg_en)
                   if len(s.split()) <= n and len(t.split()) <= n)
        stats = json.loads((work / f"len{n}" / "filter.json").read_text())
        assert (stats["total"], stats["kept"], stats["removed"]) == \
            (len(seg_de), kept, len(seg_de) - kept)
        assert 0 < stats["removed"] < stats["total"]
        share = 100.0 * (len(seg_de) - kept) / len(seg_de)
        assert (f"kept {kept} of {len(seg_de)} pairs ({100 - share:.2f}%), "
                f"removed {len(seg_de) - kept} ({share:.2f}%)") in deen["proc"].stdout
        assert len(lines(work / f"len{n}" / "train.de")) == kept
        assert max(len(x.split()) for x in lines(work / f"len{n}" / "train.en")) <= n
        # binarized: 8 shards whose sizes add up to the kept pairs; valid/test in shard0
        shards = sorted((work / "data-bin" / f"len{n}").glob("shard[0-9]*"))
        assert len(shards) == 8
        log = (work / "data-bin" / f"len{n}.log").read_text()
        sizes = [int(m) for m in re.findall(r"\[de\] \S*train\d+\.de: (\d+) sents", log)]
        assert sum(sizes) == kept and len(sizes) == 8
        for split in ("train", "valid", "test"):
            assert (shards[0] / f"{split}.de-en.de.bin").exists()
        assert (shards[0] / "dict.de.txt").read_text() == \
            (work / "dict" / "dict.de.txt").read_text()


@pytest.mark.slow
@pytest.mark.xdist_group("deen")  # one worker: the preparation is made once
def test_deen_rerun_skips_and_refuses_other_settings(deen):
    proc = run(deen["cmd"])
    assert "skip  binarize len75 (done)" in proc.stderr and "start " not in proc.stderr
    assert "length filter (source or target > 75 subword tokens): kept" in proc.stdout
    other = [str(c) for c in deen["cmd"]]
    other[other.index("--bpe-merges") + 1] = "600"
    proc = run(other, check=False)
    assert proc.returncode != 0 and "prepared with other settings" in proc.stderr


@pytest.fixture(scope="module")
def deen_testsets(deen):
    run(["bash", SCRIPTS / "build-test-sets.sh", "--work-dir", deen["work"], "--sets",
         "newstest_all,concat_seq"])
    return deen["work"] / "testsets"


@pytest.mark.slow
@pytest.mark.xdist_group("deen")  # one worker: the preparation is made once
def test_newstest_all_and_concat_seq_on_real_data(deen_testsets):
    ts = deen_testsets
    first = {lang: lines(DEEN / f"newstest2008.{lang}") for lang in ("de", "en")}
    last = {lang: lines(DEEN / f"newstest2018.{lang}") for lang in ("de", "en")}
    for lang in ("de", "en"):
        nall = lines(ts / "newstest_all" / f"raw.{lang}")
        cat = lines(ts / "concat_seq" / f"raw.{lang}")
        assert len(nall) == 28075 and len(cat) == 14038
        assert nall[0] == first[lang][0] and nall[-1] == last[lang][-1]
        assert nall[len(first[lang])] == lines(DEEN / f"newstest2009.{lang}")[0]
        assert cat[0] == f"{first[lang][0]} {first[lang][1]}"
        assert cat[-1] == last[lang][-1]  # 28,075 is odd: the last pair stays alone
        assert cat[-2] == f"{last[lang][-3]} {last[lang][-2]}"
        # segmented like the training data, joined after segmentation
        seg_all = lines(ts / "newstest_all" / f"seg.{lang}")
        seg_cat = lines(ts / "concat_seq" / f"seg.{lang}")
        assert len(seg_all) == 28075 and len(seg_cat) == 14038
        assert seg_cat[0] == f"{seg_all[0]} {seg_all[1]}" and seg_cat[-1] == seg_all[-1]
    assert any("@@ " in s for s in seg_all)
    for name, n in (("newstest_all", 28075), ("concat_seq", 14038)):
        d = ts / name
        assert f"LINES={n}" in (d / "meta.env").read_text()
        assert json.loads((d / ".steps" / "meta.json").read_text())["status"] == "done"
        assert (d / "bin" / "test.de-en.de.bin").exists()
        assert re.search(rf"seg\.de: {n} sents", (d / "preprocess.log").read_text())


# ----------------------------------------------------------------------------------------
# the synthetic pair of the demo, through the same preparation and test-set scripts
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_toy_preparation_and_test_sets(tmp_path):
    work = tmp_path / "toy"
    cmd = ["bash", SCRIPTS / "prepare-toy.sh", "--work-dir", work, "--train-pairs", "1500",
           "--dev-pairs", "50", "--test-pairs", "41", "--test-words", "30 60", "--max-len", "40,60"]
    proc = run(cmd)
    seg_src, seg_tgt = lines(work / "seg" / "train.src"), lines(work / "seg" / "train.tgt")
    assert len(seg_src) == len(seg_tgt) == 1500 and any("@@ " in s for s in seg_src)
    for n in (40, 60):
        kept = [(s, t) for s, t in zip(seg_src, seg_tgt) if len(s.split()) <= n and len(t.split()) <= n]
        assert lines(work / f"len{n}" / "train.tgt") == [t for _, t in kept]
        assert f"kept {len(kept)} of 1500 pairs" in proc.stdout
        assert (work / "data-bin" / f"len{n}" / "shard0" / "train.src-tgt.src.bin").exists()
    # the test set is the generator's output for seed + 2000
    run([sys.executable, "-m", "relpos_recipes.tools.toy_corpus", "--lexicon-size", "small", "--n", "41",
         "--seed", "2001", "--min-words", "30", "--max-words", "60", "--out-prefix", tmp_path / "direct"])
    for lang in ("src", "tgt"):
        assert lines(work / "orig" / f"test.{lang}") == lines(tmp_path / f"direct.{lang}")
    # a re-run skips every step; other settings are refused
    assert run(cmd).stderr.count("start ") == 0
    other = [str(c) for c in cmd]
    other[other.index("--test-words") + 1] = "30 70"
    proc = run(other, check=False)
    assert proc.returncode != 0 and "prepared with other settings" in proc.stderr

    run(["bash", SCRIPTS / "build-test-sets.sh", "--work-dir", work])  # default: test,concat_seq
    test, cat = work / "testsets" / "test", work / "testsets" / "concat_seq"
    for lang in ("src", "tgt"):
        assert lines(test / f"raw.{lang}") == lines(work / "orig" / f"test.{lang}")
        assert lines(test / f"tok.{lang}") == lines(test / f"raw.{lang}")  # no tokenization
        whole, joined = lines(test / f"seg.{lang}"), lines(cat / f"seg.{lang}")
        assert len(joined) == 21 and joined[0] == f"{whole[0]} {whole[1]}" and joined[-1] == whole[-1]
    words = [len(s.split()) for s in lines(test / "raw.src")]
    assert 30 <= min(words) and max(words) <= 60
    assert "LINES=21" in (cat / "meta.env").read_text()
    assert (cat / "bin" / "test.src-tgt.src.bin").exists()


def test_a_deleted_binarized_folder_is_redone_and_nothing_else(tmp_path, monkeypatch):
    """prepare-toy.sh's binarization declares data-bin/lenN as its output, which no other step
    writes or reads: deleted, it is redone on a re-run (its manifest alone does not count) and
    nothing else is (the engine's rule for a deleted output: tests/engine/test_steps.py)."""
    work = tmp_path / "toy"
    graph = recipe_graph(monkeypatch, "prepare-toy", "--work-dir", work, "--max-len", "30")
    (steps,) = [job.steps for job in graph.jobs]
    data_bin = work / "data-bin" / "len30"
    (binarize,) = [step for step in steps if data_bin in step.outputs]
    assert binarize.name == "bin.len30" and binarize.description == "binarize len30"
    others = [step for step in steps if step is not binarize]
    assert not [step for step in others for path in (*step.inputs, *step.outputs) if path.is_relative_to(data_bin)]


# ----------------------------------------------------------------------------------------
# Zh->En SentencePiece path on a small Chinese sample
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def zhen(tmp_path_factory):
    need(ZHEN)
    root = tmp_path_factory.mktemp("zhen")
    standin = root / "standin"
    standin.mkdir()
    sample = {lang: lines(ZHEN / f"newstest2018.{lang}") for lang in ("zh", "en")}
    parts = {"news-commentary-v14.en-zh": (0, 400), "UNv1.0.en-zh": (400, 800),
             "cwmt": (800, 1200)}
    for name, (a, b) in parts.items():
        for lang in ("zh", "en"):
            (standin / f"{name}.{lang}").write_text("\n".join(sample[lang][a:b]) + "\n",
                                                    encoding="utf-8")
    for lang in ("zh", "en"):  # newsdev2017 stand-in; newstest2017/2019 are the real ones
        dev = lines(ZHEN / f"newstest2017.{lang}")[:100]
        (standin / f"newsdev2017.{lang}").write_text("\n".join(dev) + "\n", encoding="utf-8")
    work = root / "work"
    # SMOKE=1: wmt_sources.py takes the 100-line newsdev2017 as a deliberate stand-in
    proc = run(["bash", SCRIPTS / "prepare-wmt19-zh-en.sh", "--work-dir", work, "--local-dir",
                standin, "--local-dir", ZHEN, "--offline", "--spm-vocab", "1000",
                "--shards", "2"], env={"SMOKE": "1"})
    return {"work": work, "proc": proc}


@pytest.mark.slow
def test_zhen_sentencepiece_path(zhen):
    work = zhen["work"]
    for lang in ("zh", "en"):
        assert (work / "seg" / f"spm.{lang}.model").exists()
    seg_zh, seg_en = lines(work / "seg" / "train.zh"), lines(work / "seg" / "train.en")
    assert len(seg_zh) == len(seg_en) > 1000
    assert all("\u2581" in s for s in seg_zh[:50])
    # Chinese is segmented into pieces (a sentence is one "word" before SentencePiece)
    assert sum(len(s.split()) for s in seg_zh[:50]) > 10 * 50
    kept = sum(1 for s, t in zip(seg_zh, seg_en) if len(s.split()) <= 100 and len(t.split()) <= 100)
    stats = json.loads((work / "len100" / "filter.json").read_text())
    assert (stats["total"], stats["kept"]) == (len(seg_zh), kept)
    assert f"kept {kept} of {len(seg_zh)} pairs" in zhen["proc"].stdout
    # dev = newsdev2017 + newstest2017, test = newstest2019
    assert len(lines(work / "seg" / "valid.zh")) == 100 + 2001
    assert len(lines(work / "seg" / "test.zh")) == 2000
    assert sorted(p.name for p in (work / "data-bin" / "len100").glob("shard[0-9]*")) == \
        ["shard0", "shard1"]
    # what translate.sh does to outputs: decoding the pieces gives the text back
    tool("deseg", "--seg", "spm", "--spm-model", work / "seg" / "spm.en.model", "--input", work / "seg" / "test.en",
         "--out", work / "dec.en")
    norm = [" ".join(unicodedata.normalize("NFKC", x).split())
            for x in lines(work / "text" / "test.en")]
    assert lines(work / "dec.en") == norm
    # the test set for the report
    run(["bash", SCRIPTS / "build-test-sets.sh", "--work-dir", work])
    ts = work / "testsets" / "newstest2019"
    assert lines(ts / "raw.zh") == lines(ZHEN / "newstest2019.zh")
    assert (ts / "bin" / "test.zh-en.zh.bin").exists()


# ----------------------------------------------------------------------------------------
# SMOKE=1 recipes, end to end to the analysis report
# ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_smoke_table3_to_a_report(tmp_path):
    """SMOKE=1 table3.sh end to end (stand-in data cut from the newstest files, both length
    settings, concat_seq built on newstest_all, four tiny models, the analysis report); a
    second run does nothing but the report.  The other tables are planned in test_study.py
    (their steps are the same).  Where a SLURM cluster can be started, the same run
    goes through SLURM instead, in tests/cluster/test_slurm.py."""
    need(DEEN)
    if local_slurm()[0] is not None:
        pytest.skip("SMOKE table 3 and table 5 run through SLURM in tests/cluster/test_slurm.py")
    env = {"SMOKE": "1", "SMOKE_DATA": str(NEWSTEST)}
    report_ok = run([sys.executable, "-c", "import relpos_analysis.report"], check=False).returncode == 0
    if not report_ok:
        env["SKIP_REPORT"] = "1"
    roots = ["--work-root", tmp_path / "work", "--runs-root", tmp_path / "runs"]
    proc = run(["bash", SCRIPTS / "reproduce" / "table3.sh", *roots], env=env)
    runs = tmp_path / "runs" / "smoke" / "wmt19-de-en"
    systems = ["transformer_abs-len100", "transformer_rel-len100", "transformer_abs-len75",
               "transformer_rel-len75"]
    prep = tmp_path / "work" / "smoke" / "wmt19-de-en"
    assert len(lines(prep / "testsets" / "newstest_all" / "raw.de")) == 10 * SMOKE_TEST_LINES  # 2008-2017
    for s in systems:
        manifest = json.loads((runs / s / ".steps" / "train.json").read_text())
        assert (runs / s / "checkpoint_best.pt").exists() and manifest["status"] == "done"
        assert manifest["identity"][:2] == ["--arch", s.split("-len")[0]]
        hyp = lines(runs / s / "concat_seq" / "hyp.txt")
        assert len(hyp) == 5 * SMOKE_TEST_LINES and any(hyp)
        assert "@@" not in "".join(hyp)
    again = run(["bash", SCRIPTS / "reproduce" / "table3.sh", *roots], env=env)
    assert again.stderr.count("skip  train ") == 4 and again.stderr.count("skip  translate ") == 4
    assert "start " not in again.stderr
    if not report_ok:
        pytest.skip("relpos_analysis.report not importable: translations checked, report skipped")
    md = (tmp_path / "runs" / "smoke" / "reports" / "table3" / "report.md").read_text()
    for name in ("Absolute@100", "Relative@100", "Absolute@75", "Relative@75"):
        assert name in md and name in proc.stdout  # the markdown table also goes to stdout
    # table 5 (every scheme; table 3's two here) on the same data reuses table 3's models
    five = run(["bash", SCRIPTS / "reproduce" / "table5.sh", "--archs",
                "transformer_abs,transformer_rel", *roots], env=env)
    assert five.stderr.count("skip  train ") == 4  # every model
    assert five.stderr.count("skip  translate ") == 4  # table 3's concat_seq
    assert five.stderr.count("start translate ") == 4  # newstest_all
    for report in ("table5-newstest_all", "table5-concat_seq"):
        md = (tmp_path / "runs" / "smoke" / "reports" / report / "report.md").read_text()
        for name in ("transformer_abs@100 (baseline)", "transformer_rel@100", "transformer_abs@75",
                     "transformer_rel@75"):
            assert name in md, (report, name)
