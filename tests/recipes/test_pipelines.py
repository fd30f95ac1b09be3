"""The data, training and reproduction scripts (scripts/*.sh, scripts/reproduce/table*.sh).

Fast tests exercise the helpers and the command lines (--help, --dry-run, the corpus
readers on synthetic archives, missing-corpus messages, atomic downloads, step stamps).
The slow ones run the real pipelines on the newstest data in ../shared/data/wmt-newstest
(skipped when it is absent): the De->En preparation offline end to end, the test sets on
the real data (28,075 / 14,038 pairs), the Zh->En SentencePiece path on a small Chinese
sample, and SMOKE=1 table recipes up to the analysis report.
"""
import gzip
import io
import json
import re
import shutil
import sys
import tarfile
import unicodedata
import zipfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT, SHARED, local_slurm, run_command as run
from relpos_recipes.engine import StepError
from relpos_analysis import fairseq_log
from relpos_recipes.tools.fairseq_generate import write_hypotheses

REPO = REPO_ROOT
SCRIPTS = REPO / "scripts"
NEWSTEST = SHARED / "data" / "wmt-newstest"
DEEN = NEWSTEST / "de-en"
ZHEN = NEWSTEST / "zh-en"
NEWSTEST_ALL_YEARS = [2008, 2009, 2010, 2011, 2012, 2013, 2014, 2016, 2017, 2018]

ALL_SCRIPTS = [
    "prepare-wmt19-de-en.sh", "prepare-wmt19-zh-en.sh", "prepare-toy.sh", "demo.sh", "leaderboard.sh",
    "build-test-sets.sh", "train.sh", "prepare-tatoeba.sh", "reproduce/tatoeba.sh",
    "translate.sh", "reproduce/table1.sh", "reproduce/table2.sh", "reproduce/table3.sh",
    "reproduce/table4.sh", "reproduce/table5.sh", "reproduce/scan.sh",
]




def lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")[:-1]


def need(path):
    if not Path(path).is_dir():
        pytest.skip(f"shared newstest data not available ({path})")


# ----------------------------------------------------------------------------------------
# command lines
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("script", ALL_SCRIPTS)
def test_help(script):
    text = (SCRIPTS / script).read_text()
    assert "set -euo pipefail" in text
    out = run(["bash", SCRIPTS / script, "--help"]).stdout
    assert "Usage:" in out and "--help" in out


@pytest.mark.parametrize("script", ["demo.sh", "leaderboard.sh"])
@pytest.mark.parametrize("gpus, message", [
    ("x", "--gpus: expected the number of GPUs to use (0 for CPU cores only), got 'x'"),
    ("99", "--gpus 99 but torch sees"),
])
def test_demo_and_leaderboard_refuse_gpus_they_do_not_have(script, gpus, message, tmp_path):
    out = tmp_path / "out"
    proc = run(["bash", SCRIPTS / script, "--systems", "transformer_abs", "--gpus", gpus,
                "--out-dir", out], check=False)
    assert proc.returncode != 0 and message in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("script, option, extra", [
    ("prepare-toy.sh", "--work-dir", []),
    ("prepare-wmt19-de-en.sh", "--work-dir", ["--offline"]),
    ("prepare-tatoeba.sh", "--out-dir", ["--download"]),  # the message names the script's own option
])
def test_prepare_refuses_a_folder_it_did_not_make(script, option, extra, tmp_path):
    """Preparing clears temporary files and rewrites its outputs: never in someone else's
    folder.  Corpora placed in raw/ beforehand are welcome."""
    work = tmp_path / "work"
    (work / "raw").mkdir(parents=True)
    (work / "notes.txt").write_text("mine\n")
    (work / "draft.tmp.123").write_text("mine too\n")
    proc = run(["bash", SCRIPTS / script, option, work, *extra], check=False)
    assert proc.returncode != 0
    assert f"{option} {work} holds files that no preparation made, such as draft.tmp.123,notes.txt" in proc.stderr
    assert sorted(p.name for p in work.iterdir()) == ["draft.tmp.123", "notes.txt", "raw"]


def test_train_dry_run_has_the_study_optimisation(tmp_path):
    data = tmp_path / "len100"
    for k in range(8):
        (data / f"shard{k}").mkdir(parents=True)
    out = run(["bash", SCRIPTS / "train.sh", "--data", data, "--arch", "transformer_rel",
               "--save-dir", tmp_path / "ck", "--dry-run", "--gpus", "1",
               "--encoder-layers", "1"]).stdout
    for flag in ["--optimizer adam", "--lr 3e-4", "--lr-scheduler reduce_lr_on_plateau",
                 "--lr-shrink 0.9", "--lr-patience 6", "--warmup-updates 0",
                 "--max-tokens 4700", "--update-freq 1", "--best-checkpoint-metric ppl",
                 "--patience 24", "--max-epoch 160", "--user-dir fairseq_relpos",
                 "--arch transformer_rel", "--fp16", "--encoder-layers 1"]:
        assert flag in out, flag
    assert f"{data}/shard0:{data}/shard1:" in out and f"{data}/shard7 " in out
    # the batch stays 4,700 tokens per update on other GPU counts / accumulation
    out = run(["bash", SCRIPTS / "train.sh", "--data", data, "--arch", "transformer_abs",
               "--save-dir", tmp_path / "ck", "--dry-run", "--gpus", "2", "--update-freq", "2",
               "--precision", "amp", "--max-epochs", "5"]).stdout
    assert "--max-tokens 1175" in out and "--update-freq 2" in out and "--amp" in out
    assert "--distributed-world-size 2" in out and "--max-epoch 40" in out


def test_translate_dry_run(tmp_path):
    out = run(["bash", SCRIPTS / "translate.sh", "--checkpoint", tmp_path / "c.pt", "--testset",
               tmp_path / "ts", "--out-dir", tmp_path / "o", "--dry-run", "--beam", "12"]).stdout
    assert "fairseq-generate" in out and "--beam 12" in out
    assert "--max-len-a 2" in out and "--max-len-b 10" in out


@pytest.mark.parametrize("smoke", ["0", "1"])
def test_recipes_dry_run(tmp_path, smoke):
    """--dry-run lists every step of a recipe's graph with its command, and does nothing."""
    want = {
        "table1": ["relpos_recipes.tools.corpora corpus --pair de-en", "relpos_recipes.tools.corpora corpus --pair zh-en", "transformer_abs",
                   "transformer_rel", "newstest2018", "newstest2019", "table1-zh-en"],
        "table2": ["binarize len75", "transformer_lstm_pos-len100", "transformer_abs-len75",
                   "transformer_rel-len75", "newstest_all", "--baseline Absolute@100"],
        "table3": ["concat_seq", "transformer_abs-len75", "transformer_rel-len100"],
        "table4": ["transformer_rel_sin", "transformer_rel_k", "transformer_rel_abs",
                   "concat_seq", "--baseline Relative"],
        "table5": ["transformer_huang4-len100", "transformer_shape-len75", "table5-newstest_all",
                   "table5-concat_seq", "--baseline transformer_abs@100"],
    }
    for table, needles in want.items():
        out = run(["bash", SCRIPTS / "reproduce" / f"{table}.sh", "--dry-run", "--work-root",
                   tmp_path / "w", "--runs-root", tmp_path / "r",
                   "--system", "NoPE@100=transformer_nope@100", "--system", "T5@75=transformer_t5@75"],
                  env={"SMOKE": smoke}).stdout
        for n in needles + ["relpos_recipes.tools.fairseq_train", "relpos_recipes.tools.fairseq_generate", "fairseq-train", "fairseq-generate",
                            "transformer_nope-len100", "NoPE@100=", "transformer_t5-len75",
                            "T5@75=", "[run (not run before)] train transformer_nope-len100", "[later] the report table", "relpos_analysis.report"]:
            assert n in out, (table, n)
        assert ("--encoder-layers 1" in out) == (smoke == "1")
    assert not list(tmp_path.rglob("*.json"))  # no manifest: nothing ran


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------
def test_filter_pairs_counts(tmp_path):
    src = ["a " * 3, "a " * 10, "", "a " * 2, "a " * 4]
    tgt = ["b " * 3, "b " * 2, "b", "b " * 30, "b " * 4]
    (tmp_path / "s").write_text("\n".join(x.strip() for x in src) + "\n")
    (tmp_path / "t").write_text("\n".join(x.strip() for x in tgt) + "\n")
    out = run([sys.executable, "-m", "relpos_recipes.tools.filter_pairs", "--src", tmp_path / "s", "--tgt",
               tmp_path / "t", "--out-src", tmp_path / "os", "--out-tgt", tmp_path / "ot",
               "--max-len", "5", "--report", tmp_path / "f.txt"]).stdout
    # removed: line 2 (source 10 > 5), line 4 (target 30 > 5); the empty source is kept here
    assert "kept 3 of 5 pairs (60.00%), removed 2 (40.00%)" in out
    assert lines(tmp_path / "os") == ["a a a", "", "a a a a"]
    assert json.loads((tmp_path / "f.json").read_text())["removed"] == 2
    out = run([sys.executable, "-m", "relpos_recipes.tools.filter_pairs", "--src", tmp_path / "s", "--tgt",
               tmp_path / "t", "--out-src", tmp_path / "os", "--out-tgt", tmp_path / "ot",
               "--min-len", "1", "--max-ratio", "9"]).stdout
    # removed: the empty source; 2 vs 30 tokens (ratio 15)
    assert "kept 3 of 5 pairs" in out
    assert not list(tmp_path.glob("*.tmp.*"))


def tool(*args, cwd=REPO, check=True):
    return run([sys.executable, "-m", "relpos_recipes.tools.text", *map(str, args)], cwd=cwd, check=check)


def test_concat_lines_by_two_and_three(tmp_path):
    (tmp_path / "odd").write_text("1\n2\n3\n4\n5\n")
    (tmp_path / "even").write_text("a b\nc\n")
    for n, source, out in ((2, "odd", "odd.cat"), (2, "even", "even.cat"), (3, "odd", "odd.cat3"), (3, "even", "even.cat3")):
        tool("concat-lines", "--n", n, "--input", tmp_path / source, "--out", tmp_path / out)
    assert lines(tmp_path / "odd.cat") == ["1 2", "3 4", "5"]
    assert lines(tmp_path / "even.cat") == ["a b c"]
    assert lines(tmp_path / "odd.cat3") == ["1 2 3", "4 5"]
    assert lines(tmp_path / "even.cat3") == ["a b c"]


def test_fetch_is_atomic(tmp_path):
    (tmp_path / "remote.bin").write_bytes(b"x" * 100_000)
    dest = tmp_path / "raw" / "file.bin"
    run([sys.executable, "-m", "relpos_recipes.tools.corpora", "fetch", (tmp_path / "remote.bin").as_uri(), dest])
    assert dest.read_bytes() == b"x" * 100_000
    assert not (tmp_path / "raw" / "file.bin.part").exists()
    bad = tmp_path / "raw" / "missing.bin"
    r = run([sys.executable, "-m", "relpos_recipes.tools.corpora", "fetch", (tmp_path / "nope").as_uri(), bad,
             "--retries", "1"], check=False)
    assert r.returncode != 0 and "could not download" in r.stderr
    assert not bad.exists()


def _corpus(tmp_path, pair, name, *dirs, offline=True):
    out = tmp_path / "out" / name
    cmd = [sys.executable, "-m", "relpos_recipes.tools.corpora", "corpus", "--pair", pair, "--name", name,
           "--raw-dir", tmp_path / "raw", "--out-prefix", out]
    for d in dirs:
        cmd += ["--search", d]
    if offline:
        cmd.append("--offline")
    return run(cmd, check=False), out


def test_corpus_readers_on_distributed_formats(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    # Europarl v9 / News Commentary v14: tsv.gz, de<TAB>en; a stray \r stays inside its line
    with gzip.open(local / "europarl-v9.de-en.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("Hallo Welt\tHello world\nein\rzwei\tone two\n\tonly english\n")
    # CommonCrawl: a tgz holding commoncrawl.de-en.{de,en} among other files
    with tarfile.open(local / "training-parallel-commoncrawl.tgz", "w:gz") as tf:
        for member, text in [("commoncrawl.de-en.de", "Haus\nBaum\n"),
                             ("commoncrawl.de-en.en", "house\ntree\n"),
                             ("commoncrawl.fr-en.fr", "maison\n")]:
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    # Rapid 2019: a zip
    with zipfile.ZipFile(local / "rapid2019.de-en.zip", "w") as zf:
        zf.writestr("rapid2019.de-en.de", "Eins\nZwei\nDrei\n")
        zf.writestr("rapid2019.de-en.en", "One\nTwo\nThree\n")
    r, out = _corpus(tmp_path, "de-en", "europarl", local)
    assert r.returncode == 0, r.stderr
    assert lines(f"{out}.de") == ["Hallo Welt", "ein zwei", ""]
    assert lines(f"{out}.en") == ["Hello world", "one two", "only english"]
    r, out = _corpus(tmp_path, "de-en", "commoncrawl", local)
    assert r.returncode == 0, r.stderr
    assert lines(f"{out}.de") == ["Haus", "Baum"] and lines(f"{out}.en") == ["house", "tree"]
    r, out = _corpus(tmp_path, "de-en", "rapid", local)
    assert r.returncode == 0, r.stderr
    assert lines(f"{out}.en") == ["One", "Two", "Three"]
    # Zh->En News Commentary: en<TAB>zh; the Chinese side becomes the source
    with gzip.open(local / "news-commentary-v14.en-zh.tsv.gz", "wt", encoding="utf-8") as f:
        f.write("Hello\t你好\nThank you\t谢谢你\n")
    r, out = _corpus(tmp_path, "zh-en", "news-commentary", local)
    assert r.returncode == 0, r.stderr
    assert lines(f"{out}.zh") == ["你好", "谢谢你"] and lines(f"{out}.en") == ["Hello", "Thank you"]
    # CWMT as a directory of *_ch.txt / *_en.txt pairs
    (local / "cwmt" / "casia2015").mkdir(parents=True)
    (local / "cwmt" / "casia2015" / "casia2015_ch.txt").write_text("一\n二\n", encoding="utf-8")
    (local / "cwmt" / "casia2015" / "casia2015_en.txt").write_text("one\ntwo\n")
    r, out = _corpus(tmp_path, "zh-en", "cwmt", local)
    assert r.returncode == 0, r.stderr
    assert lines(f"{out}.zh") == ["一", "二"]
    # parallel files of different lengths are an error, and leave no output
    (local / "un.zh").write_text("一\n二\n", encoding="utf-8")
    (local / "un.en").write_text("one\n")
    r, out = _corpus(tmp_path, "zh-en", "un", local)
    assert r.returncode != 0 and "ends after" in r.stderr
    assert not Path(f"{out}.zh").exists() and not list((tmp_path / "out").glob("*.tmp.*"))


def test_testset_from_sgm_in_dev_tgz(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    sgm_src = ('<srcset setid="newstest2014" srclang="any">\n<doc docid="1">\n'
               '<seg id="1">Ein  Satz .</seg>\n<seg id="2">Noch einer</seg>\n</doc>\n</srcset>\n')
    sgm_ref = ('<refset setid="newstest2014" srclang="any" trglang="en">\n<doc docid="1">\n'
               '<seg id="1">A sentence .</seg>\n<seg id="2">Another one</seg>\n</doc>\n</refset>\n')
    with tarfile.open(local / "dev.tgz", "w:gz") as tf:
        for member, text in [("dev/newstest2014-deen-src.de.sgm", sgm_src),
                             ("dev/newstest2014-deen-ref.en.sgm", sgm_ref),
                             ("dev/news-test2008.de", "Alt\n"), ("dev/news-test2008.en", "Old\n")]:
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    for name, de, en in [("newstest2014", ["Ein Satz .", "Noch einer"],
                          ["A sentence .", "Another one"]),
                         ("newstest2008", ["Alt"], ["Old"])]:
        out = tmp_path / "orig" / name
        r = run([sys.executable, "-m", "relpos_recipes.tools.corpora", "testset", "--pair", "de-en", "--name",
                 name, "--search", local, "--raw-dir", tmp_path / "raw", "--out-prefix", out,
                 "--offline", "--stand-in"], check=False)
        assert r.returncode == 0, r.stderr
        assert lines(f"{out}.de") == de and lines(f"{out}.en") == en


def test_missing_corpus_messages(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r, out = _corpus(tmp_path, "de-en", "rapid", empty)
    assert r.returncode == 2
    assert "missing de-en training corpus 'rapid'" in r.stderr
    assert "rapid2019.de-en.zip" in r.stderr
    assert "https://s3-eu-west-1.amazonaws.com/tilde-model/rapid2019.de-en.zip" in r.stderr
    assert not Path(f"{out}.de").exists()
    r, _ = _corpus(tmp_path, "zh-en", "un", empty, offline=False)
    assert r.returncode == 2 and "conferences.unite.un.org/UNCorpus" in r.stderr
    assert "manual download" in r.stderr
    r, _ = _corpus(tmp_path, "zh-en", "cwmt", empty, offline=False)
    assert r.returncode == 2 and "CWMT" in r.stderr and "registering" in r.stderr
    # the preparation stops at a missing corpus, which is not done
    work = tmp_path / "work"
    r = run(["bash", SCRIPTS / "prepare-wmt19-de-en.sh", "--work-dir", work, "--local-dir",
             empty, "--offline"], check=False)
    assert r.returncode != 0
    missing = re.search(r"missing de-en training corpus '([a-z-]+)'", r.stderr).group(1)
    archive = {"commoncrawl": "training-parallel-commoncrawl.tgz", "europarl": "europarl-v9.de-en.tsv.gz",
               "news-commentary": "news-commentary-v14.de-en.tsv.gz", "rapid": "rapid2019.de-en.zip"}[missing]
    assert archive in r.stderr
    assert json.loads((work / ".steps" / f"orig.train.{missing}.json").read_text())["status"] == "failed"
    assert not list((work / "orig").glob("*"))


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
    # SMOKE=1: corpora.py takes the 100-line newsdev2017 as a deliberate stand-in
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
    second run does nothing but the report.  The other tables are --dry-run checked above
    (their steps are the same scripts).  Where a SLURM cluster can be started, the same run
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
    assert len(lines(prep / "testsets" / "newstest_all" / "raw.de")) == 10 * 30
    for s in systems:
        manifest = json.loads((runs / s / ".steps" / "train.json").read_text())
        assert (runs / s / "checkpoint_best.pt").exists() and manifest["status"] == "done"
        assert manifest["identity"][:2] == ["--arch", s.split("-len")[0]]
        hyp = lines(runs / s / "concat_seq" / "hyp.txt")
        assert len(hyp) == 5 * 30 and any(hyp)
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


# ----------------------------------------------------------------------------------------
# One tiny pipeline, in folders whose names have spaces: prepare-toy.sh, build-test-sets.sh,
# train.sh (one model), and the faults that must not give a silent wrong result
# ----------------------------------------------------------------------------------------
TOY_PREPARE = ["--train-pairs", "400", "--dev-pairs", "20", "--test-pairs", "12",
               "--train-words", "4 10", "--test-words", "4 16", "--max-len", "30",
               "--bpe-merges", "100", "--threads", "1"]
TOY_MODEL = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
             "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32",
             "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
             "--decoder-attention-heads", "2", "--batch-tokens", "1000", "--max-update", "12",
             "--max-epochs", "100", "--patience", "-1", "--log-interval", "5",
             "--num-workers", "0"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy") / "a folder with spaces"
    work = root / "toy data"
    prepare = ["bash", SCRIPTS / "prepare-toy.sh", "--work-dir", work, *TOY_PREPARE]
    run(prepare)
    run(["bash", SCRIPTS / "build-test-sets.sh", "--work-dir", work, "--threads", "1"])
    save = root / "abs model"
    # inverse_sqrt without --warmup-updates: fairseq's default warm-up (it used to get 0);
    # learned source positions: a table that bounds the source length (sinusoids take any)
    train = ["bash", SCRIPTS / "train.sh", "--data", work / "data-bin" / "len30", "--arch",
             "transformer_abs", "--save-dir", save, "--gpus", "0", "--lr-scheduler",
             "inverse_sqrt", "--encoder-pos", "abs_learned", *TOY_MODEL]
    run(train)
    return {"root": root, "work": work, "prepare": prepare, "save": save, "train": train,
            "ckpt": save / "checkpoint_last.pt", "test": work / "testsets" / "test"}


def translate(toy, out, *extra, testset=None, check=True):
    return run(["bash", SCRIPTS / "translate.sh", "--checkpoint", toy["ckpt"], "--testset",
                testset or toy["test"], "--out-dir", out, "--cpu", *extra], check=check)


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_toy_pipeline_in_a_folder_with_spaces(toy):
    """Item: paths with spaces.  Everything above ran in "a folder with spaces"; re-running the
    preparation with another --bpe-merges is refused, and config.env keeps what the data was
    built with."""
    assert (toy["save"] / "checkpoint_best.pt").exists()
    assert json.loads((toy["save"] / ".steps" / "train.json").read_text())["status"] == "done"
    other = [str(c) for c in toy["prepare"]]
    other[other.index("--bpe-merges") + 1] = "120"
    proc = run(other, check=False)
    assert proc.returncode != 0 and "prepared with other settings" in proc.stderr
    assert "SEG_SIZE=100" in (toy["work"] / "segmentation.env").read_text()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_train_inverse_sqrt_gets_a_warm_up(toy, tmp_path):
    """train.sh --lr-scheduler inverse_sqrt trained (the fixture); it no longer passes
    --warmup-updates 0, and an explicit 0 is refused before fairseq divides by it."""
    command = json.loads((toy["save"] / ".steps" / "train.json").read_text())["command"]
    assert "--warmup-updates" not in command and "inverse_sqrt" in command
    proc = run(["bash", SCRIPTS / "train.sh", "--data", toy["work"] / "data-bin" / "len30",
                "--arch", "transformer_abs", "--save-dir", tmp_path / "s", "--lr-scheduler",
                "inverse_sqrt", "--warmup-updates", "0"], check=False)
    assert proc.returncode != 0 and "needs --warmup-updates of at least 1" in proc.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_prepare_redoes_a_deleted_output(toy):
    """A deleted data-bin/len30 is rebuilt on a re-run (its stamp alone does not count), and
    nothing else is redone."""
    data_bin = toy["work"] / "data-bin" / "len30"
    before = (data_bin / "shard0" / "train.src-tgt.src.bin").read_bytes()
    shutil.rmtree(data_bin)
    proc = run(toy["prepare"])
    assert "start binarize len30 (" in proc.stderr and proc.stderr.count("start ") == 1
    assert (data_bin / "shard0" / "train.src-tgt.src.bin").read_bytes() == before


def test_prepare_refuses_an_empty_max_len(tmp_path):
    proc = run(["bash", SCRIPTS / "prepare-toy.sh", "--work-dir", tmp_path / "w", "--max-len", ""],
               check=False)
    assert proc.returncode != 0 and "--max-len is empty" in proc.stderr
    assert not (tmp_path / "w" / "data-bin").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_translate_reuses_only_the_same_settings(toy):
    out = toy["root"] / "translations"
    translate(toy, out, "--beam", "1")
    assert "skip  translate test (done)" in translate(toy, out, "--beam", "1").stderr
    proc = translate(toy, out, "--beam", "2")
    assert "start translate test (done before with another command)" in proc.stderr
    assert "Generate test with beam=2" in (out / "generate.log").read_text()
    concat = toy["work"] / "testsets" / "concat_seq"
    proc = translate(toy, out, "--beam", "2", testset=concat)
    assert "start translate concat_seq" in proc.stderr
    assert len(lines(out / "hyp.txt")) == 6


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_translate_never_leaves_an_untranslated_sentence_empty(toy):
    """A model whose positions are too few for some sources: an error naming the cause, with
    no hypotheses and no temporary files left behind."""
    out = toy["root"] / "too long"
    proc = translate(toy, out, "--max-source-positions", "20", check=False)
    assert proc.returncode != 0 and "a source is longer than the model's positions: sentence" in proc.stderr
    assert not (out / "hyp.txt").exists()
    assert json.loads((out / ".steps" / "translate.json").read_text())["status"] == "failed"
    assert not [p for p in out.iterdir() if ".tmp." in p.name]
    # any other failure of fairseq-generate: its error, on the last line
    proc = translate(toy, out, "--no-such-option", check=False)
    assert proc.returncode != 0 and proc.stderr.splitlines()[-1].endswith(
        "error: fairseq-generate failed (exit 2): fairseq-generate: error: unrecognized arguments: --no-such-option")


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_test_set_out_of_its_preparation_is_refused_saying_why(toy, tmp_path):
    copied = tmp_path / "copied" / "test"
    shutil.copytree(toy["test"], copied)
    proc = translate(toy, tmp_path / "out", testset=copied, check=False)
    assert proc.returncode != 0 and (
        f"error: {copied} is not in a prepared folder: its hypotheses are de-segmented as its preparation says, in "
        f"{tmp_path / 'segmentation.env'}, two folders up (a test set lives in PREPARED/testsets/NAME), which is "
        "missing; translate the test set where build-test-sets.sh made it") in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_pair_too_long_for_the_model_is_refused_naming_its_side():
    """fairseq-generate checks a test pair's source and reference against the model's positions."""
    said = "Exception: Size of sample #3 is invalid (=({}, {})) since max_positions=(20, 16), skip this example with " \
           "--skip-invalid-size-inputs-valid-test"
    assert fairseq_log.too_long(["| INFO | loaded", said.format(30, 4)]) == \
        "a source is longer than the model's positions: sentence 3 has 30 source tokens, beyond its 20"
    assert fairseq_log.too_long([said.format("np.int64(12)", "np.int64(30)")]) == (
        "a reference is longer than the model's positions: sentence 3's reference has 30 target tokens, beyond its "
        "16 (fairseq-generate checks the reference's length too, although it translates without it)")
    assert fairseq_log.too_long(["Size of sample #3"]) is None


def test_the_line_a_failed_fairseq_command_says_why_in():
    traceback = ["2026-11-27 | INFO | fairseq_cli.train | {'_name': None, 'error': 1}\n",
                 "Traceback (most recent call last):\n", '  File "train.py", line 1, in <module>\n',
                 "    raise ValueError('in a frame')\n", "ValueError: --attention-impl flex computes gradients\n"]
    assert fairseq_log.last_error(traceback) == "ValueError: --attention-impl flex computes gradients"
    assert fairseq_log.last_error([*traceback[:4], "AssertionError\n"]) == "AssertionError"
    assert fairseq_log.last_error([*traceback[:4], "Exception: Size of sample #3\n"]) == "Exception: Size of sample #3"
    assert fairseq_log.last_error(["usage: fairseq-train", "fairseq-train: error: unrecognized arguments: --x"]) == \
        "fairseq-train: error: unrecognized arguments: --x"
    assert fairseq_log.last_error(["| INFO | an error rate of 3"]) is None


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_translate_overwrites_no_translation_and_takes_no_test_set_of_other_dictionaries(toy, tmp_path):
    """translate.sh --out-dir DIR refuses a hyp.txt no run made there; a copy of the test set
    whose target dictionary numbers two words the other way round is refused by name, before
    any work, as is one of another size."""
    mine = tmp_path / "mine" / "hyp.txt"
    mine.parent.mkdir()
    mine.write_text("my translation\n")
    proc = translate(toy, mine.parent, check=False)
    assert proc.returncode != 0 and f"{mine.parent} holds hyp.txt that no run of this recipe made" in proc.stderr
    assert mine.read_text() == "my translation\n"
    other = tmp_path / "testsets" / "test"
    shutil.copytree(toy["test"], other)
    shutil.copy(toy["test"].parent.parent / "segmentation.env", tmp_path)  # a copy of the preparation's test set
    dictionary = other / "bin" / "dict.tgt.txt"
    words = dictionary.read_text().splitlines(keepends=True)
    dictionary.write_text("".join([words[1], words[0], *words[2:]]))
    proc = translate(toy, tmp_path / "o", testset=other, check=False)
    assert proc.returncode != 0 and f"{dictionary} is not the tgt dictionary {toy['ckpt']} was trained with (" \
        in proc.stderr and "its words are numbered otherwise" in proc.stderr
    dictionary.write_text("".join(words[:-1]))
    proc = translate(toy, tmp_path / "o", testset=other, check=False)
    assert proc.returncode != 0 and f"{dictionary} has {len(words) + 3} entries, but {toy['ckpt']} was trained " \
        f"with a tgt dictionary of {len(words) + 4}" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_gen_output_refuses_a_sentence_without_hypothesis(tmp_path):
    """fairseq-generate told to skip sentences (--skip-invalid-size-inputs-valid-test) prints
    no H- line for them: that is an error, not an empty hypothesis."""
    log, out = tmp_path / "generate.log", tmp_path / "hyp.seg"
    log.write_text("S-0\ta b\nH-0\t-0.1\tx y\nS-2\tc\nH-2\t-0.2\tz\n")
    with pytest.raises(SystemExit, match=r"no hypothesis for 1 of 3 sentences \(ids \[1\]\)"):
        write_hypotheses(log, 3, out)
    assert not out.exists()
    with pytest.raises(SystemExit, match="beyond the 1 source lines"):  # an id beyond the source lines too
        write_hypotheses(log, 1, out)
    log.write_text("H-1\t-0.1\tb\nH-0\t-0.1\ta\n")
    write_hypotheses(log, 2, out)
    assert lines(out) == ["a", "b"]


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_scripts_train_and_translate_a_scheme_spec(toy, tmp_path):
    """Any architecture, and any spec of schemes with settings, goes through train.sh and
    translate.sh as the study's archs do."""
    save = tmp_path / "alibi+shaw"
    train = [arg if arg != toy["save"] else save for arg in toy["train"]]
    train[train.index("transformer_abs")] = "relpos_transformer"
    run(train + ["--encoder-pos", "alibi+shaw_k:k=4", "--decoder-pos", "rope+t5:buckets=8"])
    assert "encoder alibi+shaw_k:k=4, decoder rope+t5:buckets=8" in (save / "train.log").read_text()
    out = tmp_path / "translated"
    run(["bash", SCRIPTS / "translate.sh", "--checkpoint", save / "checkpoint_last.pt", "--testset",
         toy["test"], "--out-dir", out, "--cpu"])
    assert len(lines(out / "hyp.txt")) == len(lines(toy["test"] / "raw.src"))


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_train_refuses_a_folder_holding_another_model(toy):
    train = [str(c) for c in toy["train"]]
    assert "skip  train transformer_abs (done)" in run(train).stderr
    other_arch = list(train)
    other_arch[other_arch.index("--arch") + 1] = "transformer_rel"
    proc = run(other_arch, check=False)
    assert proc.returncode != 0
    assert "holds a model trained with other settings (--arch transformer_abs, now transformer_rel)" in proc.stderr
    proc = run(train + ["--lr", "1e-3"], check=False)
    assert proc.returncode != 0 and "--lr 3e-4, now 1e-3" in proc.stderr


def interrupted(save, train_command):
    """SAVE as a run of TRAIN_COMMAND (train.sh's command line) left it when it was killed:
    its manifest 'running', with that command's identity."""
    from relpos_recipes.engine import manifest
    from relpos_recipes.graphs.training import train_options

    argv = [str(a) for a in train_command[train_command.index(str(SCRIPTS / "train.sh")) + 1:]]
    step = train_options(argv).step(0)
    record = manifest.Record.start(step, {path: manifest.fingerprint(path) for path in step.inputs})
    manifest.write(step.manifest_path, record)


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_resume_from_an_empty_or_truncated_checkpoint_names_it(toy, tmp_path):
    train = [str(c) for c in toy["train"]]
    train[train.index("--save-dir") + 1] = str(tmp_path / "s")
    (tmp_path / "s").mkdir()
    last = tmp_path / "s" / "checkpoint_last.pt"
    last.write_bytes(b"")
    proc = run(train, check=False)  # no run of train.sh made it: never resumed from
    assert proc.returncode != 0 and f"{tmp_path / 's'} holds checkpoint_last.pt that no run of this recipe made" \
        in proc.stderr
    interrupted(tmp_path / "s", train)  # a run of it was killed while it saved
    proc = run(train, check=False)
    assert proc.returncode != 0 and f"{last} is empty" in proc.stderr
    last.write_bytes(toy["ckpt"].read_bytes()[:4000])
    proc = run(train, check=False)
    assert proc.returncode != 0 and f"{last} is truncated" in proc.stderr
    proc = run(["bash", SCRIPTS / "translate.sh", "--checkpoint", last, "--testset",
                toy["test"], "--out-dir", tmp_path / "o"], check=False)
    assert proc.returncode != 0 and f"{last} is truncated" in proc.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_checkpoint_of_another_architecture_is_never_taken_for_a_finished_training(toy, tmp_path):
    """A folder whose checkpoint_last.pt is another model (transformer_abs, 12 updates) is
    refused by a training of transformer_rel for 10 updates, not taken as one that reached
    --max-update and copied to checkpoint_best.pt."""
    save = tmp_path / "other"
    shutil.copytree(toy["save"], save)
    (save / "checkpoint_best.pt").unlink()
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("transformer_abs")] = "transformer_rel"
    train[train.index("--max-update") + 1] = "10"
    interrupted(save, train)
    proc = run(train, check=False)
    assert proc.returncode != 0
    assert f"{save / 'checkpoint_last.pt'} is a transformer_abs model, not --arch transformer_rel" in proc.stderr
    assert not (save / "checkpoint_best.pt").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_deleted_best_checkpoint_of_an_epoch_limited_training_says_what_to_do(toy, tmp_path):
    """checkpoint_best.pt deleted after a training that ended at --max-epoch: the re-run's
    fairseq-train resumes with nothing left to train, and the error says so and what to do."""
    save = tmp_path / "epochs"
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("--max-update") + 1] = "1000"
    train[train.index("--max-epochs") + 1] = "1"
    run(train)
    (save / "checkpoint_best.pt").unlink()
    proc = run(train, check=False)
    assert proc.returncode != 0
    assert (f"{save / 'checkpoint_best.pt'} is missing and fairseq-train, resuming from checkpoint_last.pt, had "
            "nothing left to train (its --max-epoch or --max-update was reached): restore checkpoint_best.pt, "
            "or move the folder's checkpoints away to train afresh") in proc.stderr


@pytest.mark.parametrize("gpus", ["-1", "abc", "1.5"])
def test_train_refuses_a_bad_gpu_count(tmp_path, gpus):
    proc = run(["bash", SCRIPTS / "train.sh", "--data", tmp_path, "--arch", "transformer_abs",
                "--save-dir", tmp_path / "s", "--gpus", gpus, "--dry-run"], check=False)
    assert proc.returncode != 0
    assert f"--gpus: expected the number of GPUs to use (0 for the CPU), got '{gpus}'" in proc.stderr


def test_train_warm_up_only_with_the_plateau_schedule(tmp_path):
    base = ["bash", SCRIPTS / "train.sh", "--data", tmp_path, "--arch", "transformer_abs",
            "--save-dir", tmp_path / "s", "--dry-run", "--gpus", "0"]
    assert "--warmup-updates 0" in run(base).stdout
    assert "--warmup-updates" not in run(base + ["--lr-scheduler", "inverse_sqrt"]).stdout


def test_table3_checks_architectures_before_any_work(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run(["bash", SCRIPTS / "reproduce" / "table3.sh", "--work-root", tmp_path / "w",
                "--runs-root", tmp_path / "r", "--offline", "--local-dir", empty,
                "--system", "X@100=transformer_bogus@100"], check=False)
    assert proc.returncode != 0
    assert "--system: unknown architecture transformer_bogus" in proc.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


def test_demo_refuses_duplicate_systems(tmp_path):
    proc = run(["bash", SCRIPTS / "demo.sh", "--systems", "transformer_abs,transformer_rel,transformer_abs",
                "--out-dir", tmp_path / "d"], check=False)
    assert proc.returncode != 0 and "--systems: names transformer_abs more than once" in proc.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("folder", ["data", "transformer_abs", "report/test"])
def test_demo_deletes_no_folder_it_did_not_make(tmp_path, folder):
    """demo.sh --out-dir D refuses a folder of D that it did not make, before any work, and
    leaves it as it was."""
    out = tmp_path / "d"
    mine = out / folder / "my notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("keep me\n")
    proc = run(["bash", SCRIPTS / "demo.sh", "--quick", "--systems", "transformer_abs",
                "--out-dir", out], check=False)
    assert mine.read_text() == "keep me\n"
    assert proc.returncode != 0
    assert f"{out / folder} exists and was not made by demo.sh" in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [folder.split("/")[0]]


def test_the_demo_refuses_a_translation_it_did_not_make_in_a_folder_of_its_own(tmp_path, capsys):
    """A user's hyp.txt in OUT/SYSTEM/test/ (a folder the demo made: it has step manifests) is
    refused by name before any work, as train.sh refuses checkpoints no run made."""
    from relpos_recipes.__main__ import main as recipe

    out = tmp_path / "d"
    (out / "transformer_abs" / ".steps").mkdir(parents=True)
    mine = out / "transformer_abs" / "test" / "hyp.txt"
    mine.parent.mkdir()
    mine.write_text("my translation\n")
    assert recipe(["demo", "--quick", "--systems", "transformer_abs", "--out-dir", str(out), "--dry-run"]) == 1
    assert f"{mine.parent} holds hyp.txt that no run of this recipe made" in capsys.readouterr().err
    assert mine.read_text() == "my translation\n"


def save_checkpoint(path, arch, data, updates=12, save_dir=None, vocabulary=None, **positions):
    """A checkpoint as fairseq-train 0.12.2 writes one, reduced to what it records of its
    training (the model's configuration, the task's data, the save folder, the updates) and,
    given ``vocabulary``, embeddings of that many rows."""
    import argparse

    import torch

    model = argparse.Namespace(arch=arch, **positions)
    cfg = {"model": model, "task": {"data": str(data)}, "checkpoint": {"save_dir": str(save_dir or path.parent)}}
    weights = {f"{side}.front_end.embed_tokens.weight": torch.zeros(vocabulary, 2) for side in ("encoder", "decoder")
               if vocabulary}
    torch.save({"cfg": cfg, "model": weights, "optimizer_history": [{"num_updates": updates}]}, path)


def write_dictionaries(folder, words, langs=("src", "tgt")):
    folder.mkdir(parents=True, exist_ok=True)
    for lang in langs:
        (folder / f"dict.{lang}.txt").write_text("".join(f"{word} 1\n" for word in words))


@pytest.mark.parametrize("test_words, data_kept, why", [
    (["w2", "w1", "w3"], True, "is not the tgt dictionary {checkpoint} was trained with ({data}/dict.tgt.txt): "
                               "its words are numbered otherwise"),
    (["w1", "w2", "w3", "w4"], False, "has 8 entries, but {checkpoint} was trained with a tgt dictionary of 7"),
])
def test_translate_refuses_a_test_set_of_other_dictionaries_by_name(tmp_path, test_words, data_kept, why):
    """The same corpus prepared again (another seed: its words numbered otherwise) or another
    corpus: the test set's dictionaries are not the model's, refused before any work; where
    the sizes differ, said so (not torch's size mismatch), even with the data gone."""
    from relpos_recipes.graphs.training import Translation

    data = tmp_path / "data-bin" / "len30" / "shard0"
    write_dictionaries(data, ["w1", "w2", "w3"])
    checkpoint = tmp_path / "model" / "checkpoint_best.pt"
    checkpoint.parent.mkdir()
    save_checkpoint(checkpoint, "transformer_rel", data, vocabulary=7)
    testset = tmp_path / "other" / "testsets" / "test"
    write_dictionaries(testset / "bin", ["w1", "w2", "w3"], langs=("src",))
    write_dictionaries(testset / "bin", test_words, langs=("tgt",))
    (testset / "meta.env").write_text("SRC=src\nTGT=tgt\nLINES=1\n")
    (testset.parent.parent / "segmentation.env").write_text("SEGMENTATION=none\n")  # in a prepared folder
    translation = Translation(checkpoint=checkpoint, testset=testset, out=tmp_path / "out")
    if not data_kept:
        shutil.rmtree(tmp_path / "data-bin")
    with pytest.raises(StepError, match=re.escape(f"{testset / 'bin' / 'dict.tgt.txt'} "
                                                  + why.format(checkpoint=checkpoint, data=data))):
        translation.check()
    write_dictionaries(testset / "bin", ["w1", "w2", "w3"], langs=("tgt",))
    translation.check()


@pytest.fixture
def finished_training(tmp_path):
    """A save folder of a training of transformer_rel for 12 updates that reached them, and
    its train.sh command's fairseq-train part."""
    save, data = tmp_path / "transformer_rel", tmp_path / "data-bin" / "len30"
    save.mkdir()
    for name in ("checkpoint_best.pt", "checkpoint_last.pt"):
        save_checkpoint(save / name, "transformer_rel", data, encoder_pos="shaw", decoder_pos="shaw", cross_pos="none")
    command = ["fairseq-train", str(data), "--arch", "transformer_rel", "--max-update", "12", "--patience", "3"]
    return save, data, command


@pytest.mark.parametrize("replacement, why", [
    (dict(arch="transformer_abs"), "is a transformer_abs model, not --arch transformer_rel"),
    (dict(arch="transformer_rel", encoder_pos="shaw:k=8", decoder_pos="shaw:k=8"),
     "is a transformer_rel[encoder shaw:k=8, decoder shaw:k=8] model, not the transformer_rel this command trains"),
    (dict(arch="transformer_rel", data="/elsewhere/len30"), "was trained on /elsewhere/len30, not on this "
                                                            "command's data"),
])
def test_a_checkpoint_of_another_training_in_a_finished_folder_is_refused(finished_training, replacement, why):
    """checkpoint_best.pt replaced by another system's (another architecture, other position
    specs, other data): the re-run training, which finds checkpoint_last.pt at --max-update,
    refuses it by name instead of handing it on as its model."""
    from relpos_recipes.tools.fairseq_train import train

    save, data, command = finished_training
    best = save / "checkpoint_best.pt"
    save_checkpoint(best, **{"data": data, **replacement})
    with pytest.raises(SystemExit, match=re.escape(f"error: {best} {why}")):
        train(save, command)


def test_checkpoints_of_a_folder_moved_with_its_data_are_its_own(finished_training, tmp_path):
    from relpos_recipes.tools.fairseq_train import train

    save, data, command = finished_training
    moved = tmp_path / "moved"  # the save folder and the data, moved together
    shutil.copytree(save, moved / "transformer_rel")
    train(moved / "transformer_rel", [command[0], str(moved / "data-bin" / "len30"), *command[2:]])


@pytest.mark.parametrize("finished", ["max-update", "patience"])
def test_a_lost_best_checkpoint_of_a_finished_training_is_not_replaced_by_the_last(finished_training, finished):
    """checkpoint_best.pt deleted after the training reached --max-update or stopped early by
    --patience: the last checkpoint is no stand-in for it (after an early stop it is the worse
    one by construction); the run says what to do."""
    from relpos_recipes.tools.fairseq_train import train

    save, data, command = finished_training
    if finished == "patience":
        command[command.index("--max-update") + 1] = "1000"
        (save / "train.log").write_text(
            "2026-11-23 17:27:24 | INFO | fairseq_cli.train | {'_name': None, 'common': {}}\n"
            "2026-11-23 17:29:53 | INFO | fairseq_cli.train | early stop since valid performance hasn't "
            "improved for last 3 runs\n2026-11-23 17:29:53 | INFO | fairseq_cli.train | done training in 142.9 seconds\n")
    (save / "checkpoint_best.pt").unlink()
    with pytest.raises(SystemExit, match=re.escape(f"{save / 'checkpoint_best.pt'} is missing and ")
                       + ".*restore checkpoint_best.pt, or move the folder's checkpoints away to train afresh"):
        train(save, command)
    assert not (save / "checkpoint_best.pt").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_training_ended_before_it_was_marked_done_is_not_trained_further(toy, tmp_path):
    """Killed after its last checkpoint but before its manifest said done: the re-run ends
    where the uninterrupted training ended (fairseq alone would take one more update)."""
    save = tmp_path / "copy"
    shutil.copytree(toy["save"], save)
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    interrupted(save, train)
    before = (save / "checkpoint_last.pt").read_bytes()
    proc = run(train)
    assert "has reached --max-update 12: training had finished" in proc.stdout
    assert (save / "checkpoint_last.pt").read_bytes() == before
    assert "skip  train transformer_abs (done)" in run(train).stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_training_stopped_by_its_patience_is_not_trained_further(toy, tmp_path):
    """Its last run ended by --patience, but the manifest never said done (killed, or redone
    because an input changed): fairseq would resume and train --patience more evaluations."""
    save = tmp_path / "patient"
    shutil.copytree(toy["save"], save)
    with open(save / "train.log", "a", encoding="utf-8") as log:
        log.write("2026-11-23 17:27:24 | INFO | fairseq_cli.train | {'_name': None, 'common': {}}\n"
                  "2026-11-23 17:29:53 | INFO | fairseq_cli.train | early stop since valid performance "
                  "hasn't improved for last 3 runs\n"
                  "2026-11-23 17:29:53 | INFO | fairseq_cli.train | done training in 142.9 seconds\n")
    before = (save / "checkpoint_last.pt").read_bytes()
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("--patience") + 1] = "3"
    train[train.index("--max-update") + 1] = "1000"
    interrupted(save, train)
    proc = run(train)
    assert "stopped early (--patience 3): training had finished" in proc.stdout
    assert (save / "checkpoint_last.pt").read_bytes() == before


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_typo_in_the_arch_does_not_block_the_corrected_command(toy, tmp_path):
    save = tmp_path / "typo"
    train = [arg if arg != toy["save"] else save for arg in toy["train"]]
    typo = list(train)
    typo[typo.index("transformer_abs")] = "transformer_nonexistent"
    assert run(typo, check=False).returncode != 0
    proc = run(train)  # no checkpoint of the typo exists: nothing to protect
    assert "start train transformer_abs (started before with another command)" in proc.stderr \
        or "start train transformer_abs (failed before with another command)" in proc.stderr
    assert (save / "checkpoint_best.pt").exists()
