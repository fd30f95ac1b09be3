"""relpos_recipes.tools.wmt_sources, the WMT data: a test set is used only at its official size, the
downloaded dev.tgz/test.tgz only with the md5 sum sacrebleu records for it, a failed
download ends in one line saying what to do, and a damaged archive is refused by name.  The
readers of the distributed formats (tsv.gz, a tgz, a zip, CWMT's folders), a test set from
the SGML of dev.tgz, the message for each missing corpus, an atomic download.

Runs the tool as the preparation scripts do (python -m relpos_recipes.tools.wmt_sources ...) on small files written
here; one test checks the official sizes against the real newstest files in ../shared
(skipped when they are absent).
"""
import gzip
import hashlib
import http.server
import io
import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile
from functools import partial
from pathlib import Path

import pytest

from conftest import shared_path
from test_pipelines import SCRIPTS, lines, run

from relpos_recipes.tools import wmt_sources


def corpora_py(*args, env=None):
    """`python -m relpos_recipes.tools.wmt_sources ARGS` outside a SMOKE=1 run; the CompletedProcess."""
    full_env = {k: v for k, v in os.environ.items() if k != "SMOKE"}
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "relpos_recipes.tools.wmt_sources", *map(str, args)],
                          capture_output=True, text=True, env=full_env)


def run_testset(name, local, tmp_path, *options, env=None):
    """wmt_sources.py testset for De->En NAME from the folder LOCAL, offline; (process, prefix)."""
    prefix = tmp_path / "orig" / name
    proc = corpora_py("testset", "--pair", "de-en", "--name", name, "--search", local,
                      "--raw-dir", tmp_path / "raw", "--out-prefix", prefix, "--offline",
                      *options, env=env)
    return proc, prefix


def write_lines(path, n, word):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{word} {i} .\n" for i in range(n)), encoding="utf-8")


def tgz(path, members):
    """A .tgz of {member name: text}."""
    with tarfile.open(path, "w:gz") as archive:
        for member, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    return path


def test_a_test_set_of_another_size_is_an_error_naming_its_files_and_the_official_size(tmp_path):
    """sacrebleu's wmt14 newstest2014 (2,737 of the 3,003 segments) in place of the WMT19 one
    would silently make newstest_all 27,809 pairs instead of 28,075."""
    local = tmp_path / "local"
    for lang, word in (("de", "Satz"), ("en", "sentence")):
        write_lines(local / f"newstest2014.{lang}", 2737, word)
    proc, prefix = run_testset("newstest2014", local, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"error: {local}/newstest2014.de and {local}/newstest2014.en hold 2,737 segments, but "
        f"the official de-en newstest2014 has 3,003 (another release, or a part of it?); "
        f"expected the WMT19 release of newstest2014, or pass --stand-in for a deliberate cut")
    assert not list(prefix.parent.glob("*"))  # no output, not even a temporary one
    # a deliberate cut: --stand-in, which SMOKE=1 (whose runs cut every set) implies
    for options, env in (("--stand-in",), None), ((), {"SMOKE": "1"}):
        proc, prefix = run_testset("newstest2014", local, tmp_path, *options, env=env)
        assert proc.returncode == 0, proc.stderr
        assert (f"de-en newstest2014: 2737 lines from {local}/newstest2014.de (a stand-in: the "
                f"official set has 3003)") in proc.stderr
        assert len(prefix.with_suffix(".en").read_text().splitlines()) == 2737
    for lang, word in (("de", "Satz"), ("en", "sentence")):
        write_lines(local / f"newstest2014.{lang}", 3003, word)
    proc, prefix = run_testset("newstest2014", local, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(prefix.with_suffix(".de").read_text().splitlines()) == 3003


def test_the_official_sizes_are_those_of_the_real_test_sets(tmp_path):
    newstest = shared_path("data", "wmt-newstest")
    for pair, sizes in wmt_sources.EXPECTED_LINES.items():
        for name, size in sizes.items():
            if not (newstest / pair / f"{name}.en").exists():
                continue  # newsdev2017 is not among them
            proc = corpora_py("testset", "--pair", pair, "--name", name, "--search",
                              newstest / pair, "--raw-dir", tmp_path / "raw", "--out-prefix",
                              tmp_path / pair / name, "--offline")
            assert proc.returncode == 0, proc.stderr
            assert f"{pair} {name}: {size} lines from" in proc.stderr
    newstest_all = [f"newstest{year}" for year in range(2008, 2019) if year != 2015]
    assert sum(wmt_sources.EXPECTED_LINES["de-en"][name] for name in newstest_all) == 28075


@pytest.fixture
def web_server(tmp_path):
    """A local web server of the folder tmp_path/site; its base URL."""
    site = tmp_path / "site"
    site.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_downloaded_test_set_archive_must_have_the_md5_sacrebleu_records(tmp_path, web_server,
                                                                          monkeypatch):
    assert wmt_sources.sacrebleu_md5("wmt19/dev", "dev.tgz") == "f2ec7af5947c19e0cacb3882eb208002"
    assert wmt_sources.sacrebleu_md5("wmt19", "test.tgz") == "84de7162d158e28403103b01aeefc39a"
    # a dev.tgz that is not WMT19's, served where the preparation downloads it from
    served = tgz(tmp_path / "site" / "dev.tgz", {"dev/newstest2014.de": "Satz\n",
                                                 "dev/newstest2014.en": "Sentence\n"})
    monkeypatch.setitem(wmt_sources.TESTSET_ARCHIVES, "dev.tgz", (f"{web_server}/dev.tgz", "wmt19/dev"))
    monkeypatch.setenv("RELPOS_FETCH_RETRIES", "1")
    monkeypatch.delenv("SMOKE", raising=False)
    raw = tmp_path / "raw"
    with pytest.raises(SystemExit) as refused:
        wmt_sources.main(["testset", "--pair", "de-en", "--name", "newstest2014", "--raw-dir",
                      str(raw), "--out-prefix", str(tmp_path / "orig" / "newstest2014")])
    got = hashlib.md5(served.read_bytes()).hexdigest()
    assert str(refused.value.code) == (
        f"error: could not download {web_server}/dev.tgz (the download has md5 {got}, expected "
        f"f2ec7af5947c19e0cacb3882eb208002); download it by hand (md5 "
        f"f2ec7af5947c19e0cacb3882eb208002) into {raw} or a --local-dir, or put newstest2014's "
        f"plain text files there, and re-run")
    assert not list(raw.glob("*")) and not (tmp_path / "orig").exists()
    # the same download with the md5 it has is kept
    kept = wmt_sources.fetch(f"{web_server}/dev.tgz", str(raw / "dev.tgz"), md5=got)
    assert open(kept, "rb").read() == served.read_bytes() and not list(raw.glob("*.part"))


def test_a_failed_download_is_one_line_saying_what_to_do(tmp_path):
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/dev.tgz"
    dest = tmp_path / "raw" / "dev.tgz"
    proc = corpora_py("fetch", url, dest, "--retries", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"error: could not download {url} ([Errno 111] Connection refused); fetch it by hand "
        f"into {dest.parent} (or a --local-dir) and re-run")


def test_a_damaged_archive_is_refused_by_name(tmp_path):
    local = tmp_path / "local"
    local.mkdir()
    text = "".join(f"Satz {i}\tsentence {i}\n" for i in range(5000))
    with gzip.open(local / "europarl-v9.de-en.tsv.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    with zipfile.ZipFile(local / "rapid2019.de-en.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("rapid2019.de-en.de", text)
        z.writestr("rapid2019.de-en.en", text)
    refusals = {}
    for name, archive in (("europarl", "europarl-v9.de-en.tsv.gz"),
                          ("rapid", "rapid2019.de-en.zip")):
        truncate(local / archive)
        proc = corpora_py("corpus", "--pair", "de-en", "--name", name, "--search", local,
                          "--raw-dir", tmp_path / "raw", "--out-prefix",
                          tmp_path / "orig" / f"train.{name}", "--offline")
        refusals[archive] = proc
    truncate(tgz(local / "dev.tgz", {"dev/newstest2014.de": text, "dev/newstest2014.en": text}))
    refusals["dev.tgz"], _ = run_testset("newstest2014", local, tmp_path)
    for archive, proc in refusals.items():
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.splitlines()[-1].startswith(
            f"error: {local / archive}: a damaged or truncated archive ("), proc.stderr
        assert f"expected {archive} as distributed, whole" in proc.stderr or \
            f"expected the WMT19 {archive} as distributed, whole" in proc.stderr
    assert not list(tmp_path.glob("orig/*")) and not list(tmp_path.glob("raw/**/*.tmp*"))


def test_fetch_is_atomic(tmp_path):
    (tmp_path / "remote.bin").write_bytes(b"x" * 100_000)
    dest = tmp_path / "raw" / "file.bin"
    run([sys.executable, "-m", "relpos_recipes.tools.wmt_sources", "fetch", (tmp_path / "remote.bin").as_uri(), dest])
    assert dest.read_bytes() == b"x" * 100_000
    assert not (tmp_path / "raw" / "file.bin.part").exists()
    bad = tmp_path / "raw" / "missing.bin"
    r = run([sys.executable, "-m", "relpos_recipes.tools.wmt_sources", "fetch", (tmp_path / "nope").as_uri(), bad,
             "--retries", "1"], check=False)
    assert r.returncode != 0 and "could not download" in r.stderr
    assert not bad.exists()


def _corpus(tmp_path, pair, name, *dirs, offline=True):
    out = tmp_path / "out" / name
    cmd = [sys.executable, "-m", "relpos_recipes.tools.wmt_sources", "corpus", "--pair", pair, "--name", name,
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
        r = run([sys.executable, "-m", "relpos_recipes.tools.wmt_sources", "testset", "--pair", "de-en", "--name",
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
