"""The Tatoeba German->English preparation (scripts/prepare-tatoeba.sh, relpos_recipes.tools.tatoeba)
and its recipe (scripts/reproduce/tatoeba.sh).

The split and the refusals run on small files written here, in both export formats; the
SMOKE=1 recipe runs end to end on every 85th pair of the real export in ../shared (skipped
when it is absent) and checks the split of real data too.
"""
import codecs
import json
import re
import socket
import sys
import zipfile

import pytest

from conftest import shared_path
from recipe_graphs import recipe_graph, words
from relpos_recipes.engine.plan import plan
from relpos_recipes.tools import tatoeba
from test_pipelines import SCRIPTS, lines, run

EXPORT = ("data", "tatoeba-deu-eng", "deu.txt")


def sentence(words, n):
    return " ".join(words[i % len(words)] for i in range(n)) + "."


def synthetic_export():
    """English<TAB>German lines with sentence groups: an English sentence with three German
    translations, a German one with two English, a chain joining both kinds, and long ones."""
    en = ["we", "see", "the", "red", "house", "today"]
    de = ["wir", "sehen", "das", "rote", "Haus", "heute"]
    rows = []
    for i in range(60):
        rows.append((f"{sentence(en, 3 + i % 5)} {i}", f"{sentence(de, 3 + i % 5)} {i}"))
    rows += [("I ran.", "Ich rannte."), ("I ran.", "Ich lief."), ("I ran.", "Ich bin gerannt."),
             ("I ran away.", "Ich lief."), ("Go.", "Geh."), ("Go away.", "Geh."),
             ("Go away.", "Hau ab."), ("Get lost.", "Hau ab.")]
    for i in range(12):  # long: 20-31 words
        rows.append((f"{sentence(en, 20 + i)} {i}", f"{sentence(de, 20 + i)} {i}"))
    rows.append((f"{sentence(en, 25)} shared", "Kurz."))  # long pair in a group with a short one
    rows.append(("Short.", "Kurz."))
    return rows


def write_export(path, rows, attribution=False):
    tail = "\tCC-BY 2.0 (France) Attribution: tatoeba.org #1 (someone)" if attribution else ""
    path.write_text("".join(f"{e}\t{d}{tail}\n" for e, d in rows), encoding="utf-8")
    return path


def split_of(out_dir):
    """{split: [(English, German)]} as written."""
    return {s: list(zip(lines(out_dir / f"{s}.en"), lines(out_dir / f"{s}.de")))
            for s in tatoeba.SPLITS}


def make_split(source, out_dir, seed=1, max_len=16, dev=10, test_short=10):
    tatoeba.main(["split", "--from", str(source), "--out-dir", str(out_dir), "--seed", str(seed),
                  "--max-len", str(max_len), "--dev-pairs", str(dev),
                  "--test-short-pairs", str(test_short)])
    return split_of(out_dir)


def assert_a_partition_by_sentence(split, rows):
    written = [pair for pairs in split.values() for pair in pairs]
    assert sorted(written) == sorted(rows)  # every pair of the file, once
    for side in (0, 1):
        owner = {}
        for name, pairs in split.items():
            for pair in pairs:
                assert owner.setdefault(pair[side], name) == name, f"{pair[side]!r} in {owner[pair[side]]} and {name}"


def test_split_keeps_every_sentence_on_one_side(tmp_path):
    rows = synthetic_export()
    split = make_split(write_export(tmp_path / "deu.txt", rows), tmp_path / "split")
    assert_a_partition_by_sentence(split, rows)
    # every long pair (and its group) is in test, with short ones beside them
    long_pairs = [r for r in rows if len(r[0].split()) > 16]
    assert set(long_pairs) <= set(split["test"])
    assert ("Short.", "Kurz.") in split["test"]
    assert any(len(e.split()) <= 16 for e, _ in split["test"] if (e, _) != ("Short.", "Kurz."))
    assert len(split["dev"]) >= 10 and len(split["train"]) > len(split["dev"])
    counts = json.loads((tmp_path / "split" / "counts.json").read_text())
    assert counts["pairs read"] == len(rows)
    assert counts["train pairs"] + counts["dev pairs"] + counts["test pairs"] == len(rows)
    assert counts["sentence groups"] < len(rows)


def test_split_is_reproducible_and_the_same_from_every_export_format(tmp_path):
    rows = synthetic_export()
    plain = write_export(tmp_path / "deu.txt", rows)
    first = make_split(plain, tmp_path / "a")
    assert make_split(plain, tmp_path / "b") == first
    assert make_split(plain, tmp_path / "c", seed=2) != first
    newer = write_export(tmp_path / "three-columns.txt", rows, attribution=True)
    assert make_split(newer, tmp_path / "d") == first
    with zipfile.ZipFile(tmp_path / "deu-eng.zip", "w") as archive:
        archive.write(plain, "deu.txt")
        archive.writestr("_about.txt", "about")
    assert make_split(tmp_path / "deu-eng.zip", tmp_path / "e") == first
    assert "deu-eng.zip:deu.txt" in (tmp_path / "e" / "SOURCE").read_text()


@pytest.mark.parametrize("content, expected", [
    (b"Hi.\tHallo!\nNo tab here\n", r"line 2: 1 tab-separated field\(s\); expected English<TAB>German"),
    (b"Hi.\tHallo!\n\t\xc3\x9cbel\n", r"line 2: the English side is empty"),
    (b"Hi.\tHallo!\nHi.\t  \n", r"line 2: the German side is empty"),
    (b"Hi.\tHallo!\nOne\tEins\tattribution\textra\n", r"line 2: 4 tab-separated field\(s\)"),
    (b"Hi.\tHallo!\nHi.\tHall\xf6chen\n", r"line 2: byte 9 is not UTF-8 \(b'\\xf6'\)"),
    (b"", r"empty file"),
])
def test_malformed_files_are_refused_with_their_line_and_nothing_is_made(tmp_path, content, expected):
    bad = tmp_path / "deu.txt"
    bad.write_bytes(content)
    out = tmp_path / "prepared"
    proc = run(["bash", SCRIPTS / "prepare-tatoeba.sh", "--from", bad, "--out-dir", out], check=False)
    assert proc.returncode != 0
    assert f"{bad}" in proc.stderr
    assert re.search(expected, proc.stderr), proc.stderr
    assert not out.exists()


def test_prepare_refuses_a_missing_file_and_bad_options(tmp_path):
    proc = run(["bash", SCRIPTS / "prepare-tatoeba.sh", "--out-dir", tmp_path / "p"], check=False)
    assert proc.returncode != 0 and "--from FILE" in proc.stderr
    proc = run(["bash", SCRIPTS / "prepare-tatoeba.sh", "--from", tmp_path / "absent.txt",
                "--out-dir", tmp_path / "p"], check=False)
    assert proc.returncode != 0 and "absent.txt: no such file" in proc.stderr
    proc = run(["bash", SCRIPTS / "prepare-tatoeba.sh", "--from", tmp_path / "x", "--max-len", "0"],
               check=False)
    assert proc.returncode != 0 and "--max-len: expected a positive integer, got '0'" in proc.stderr
    assert not (tmp_path / "p").exists()


@pytest.mark.slow
def test_smoke_recipe_end_to_end_on_a_slice_of_the_real_export(tmp_path, monkeypatch):
    """SMOKE=1 tatoeba.sh on every 85th pair of the real export: the split (checked against
    the slice), Moses, BPE, the length filter, the three test sets, a tiny system trained and
    translated, the three reports; a re-run's plan has nothing to do.  (One system: reports of
    several, in order, are the demo's and table 3's, tests/recipes/test_demo.py and
    tests/cluster/test_slurm.py.)"""
    export = shared_path(*EXPORT)
    dirs = ["--work-dir", tmp_path / "work", "--out-dir", tmp_path / "runs"]
    systems = ["transformer_rel"]
    env = {"SMOKE": "1", "SMOKE_DATA": str(export)}
    run(["bash", SCRIPTS / "reproduce" / "tatoeba.sh", "--systems", ",".join(systems), *dirs], env=env)
    work, runs = tmp_path / "work", tmp_path / "runs"
    rows = [tuple(line.split("\t")[:2]) for line in lines(work / "raw" / "slice.txt")]
    assert len(rows) == 169813 // 85
    split = split_of(work / "split")
    assert_a_partition_by_sentence(split, rows)
    counts = json.loads((work / "split" / "counts.json").read_text())
    assert counts["test pairs"] == len(split["test"]) > 100
    assert "kept" in (work / "len16" / "filter.txt").read_text()
    n_test = len(split["test"])
    for name, joined in (("test", 1), ("concat_seq", 2), ("concat3_seq", 3)):
        assert len(lines(work / "testsets" / name / "raw.en")) == -(-n_test // joined)
        rows = json.loads((runs / "report" / name / "report.json").read_text())
        assert list(dict.fromkeys(row["system"] for row in rows)) == systems
        for arch in systems:
            assert len(lines(runs / arch / name / "hyp.txt")) == -(-n_test // joined)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    again = plan(recipe_graph(monkeypatch, "tatoeba", "--systems", ",".join(systems), *dirs))
    assert [step.name for step in again.steps].count("train") == 1
    assert [step.name for step in again.steps].count("translate") == 3
    assert not again.pending() and not again.unbuilt


def test_the_leaderboard_on_tatoeba_grids_each_scheme_and_buckets_at_multiples_of_its_limit(tmp_path, monkeypatch):
    """leaderboard.sh --data tatoeba (SMOKE=1), planned in-process: the Tatoeba data's steps,
    every rate of the grid per scheme, and boards for the three test sets whose buckets lie at
    multiples of the limit of 16 tokens, no scheme set apart by the synthetic pair's 95-BLEU
    line.  (The protocol itself, choosing by dev loss and ranking, runs end to end in
    tests/recipes/test_demo.py and on SLURM in tests/cluster/test_slurm_runner.py; the
    Tatoeba data end to end in the test above.)"""
    monkeypatch.setenv("SMOKE", "1")
    monkeypatch.setenv("SMOKE_DATA", str(shared_path(*EXPORT)))
    systems = ["transformer_abs", "transformer_rel"]
    out = tmp_path / "board"
    graph = recipe_graph(monkeypatch, "leaderboard", "--data", "tatoeba", "--systems", ",".join(systems),
                         "--seeds", "1", "--lr-grid", "1e-3,3e-3", "--validate-every", "8", "--out-dir", out)
    prepared = [step.name for step in graph.job("prepare").steps]
    assert prepared[0] == "split" and "bin.len16" in prepared
    for arch in systems:
        for lr in ("1e-3", "3e-3"):
            (train,) = graph.job(f"{arch}-lr{lr}").steps
            assert f"--arch {arch} " in words(train) and f"--lr {lr} " in words(train)
            assert "--validate-interval-updates 8 " in words(train)
    # the boards' part, built before any choice: every scheme failed, every board still made
    boards = {step.home.name: words(step) for step in graph.job("boards").later.build()}
    assert set(boards) == {"test", "concat_seq", "concat3_seq"}
    for test_set, edges in (("test", "16,24,32,48"), ("concat_seq", "16,32,48,64"), ("concat3_seq", "16,32,48,64")):
        assert f"--train-limit 16 --edges {edges} " in boards[test_set]
        assert "--learned-threshold 0 " in boards[test_set]


def test_download_keeps_only_a_whole_zip_and_prints_its_sha256(tmp_path, capsys):
    """The download path against a local web server: a zip is kept with its sha256; anything
    else (a web page instead of the archive) is refused and nothing is left."""
    import hashlib
    import http.server
    import threading
    from functools import partial

    site = tmp_path / "site"
    site.mkdir()
    with zipfile.ZipFile(site / "deu-eng.zip", "w") as archive:
        archive.writestr("deu.txt", "Hi.\tHallo!\n")
    (site / "page.zip").write_text("<html>please use a browser</html>")
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        tatoeba.main(["download", "--url", f"{base}/deu-eng.zip", "--out", str(tmp_path / "got.zip")])
        digest = hashlib.sha256((site / "deu-eng.zip").read_bytes()).hexdigest()
        assert f"(sha256 {digest})" in capsys.readouterr().out
        with pytest.raises(SystemExit, match="did not send a zip archive"):
            tatoeba.main(["download", "--url", f"{base}/page.zip", "--out", str(tmp_path / "page.zip")])
        assert sorted(p.name for p in tmp_path.iterdir()) == ["got.zip", "site"]
    finally:
        server.shutdown()


def test_a_byte_order_mark_and_crlf_line_ends_are_no_part_of_the_sentences(tmp_path):
    """An export saved by a Windows editor (a UTF-8 BOM, CRLF line ends) splits exactly as
    the plain one: the BOM is not glued to the first English sentence."""
    rows = synthetic_export()
    plain = make_split(write_export(tmp_path / "deu.txt", rows), tmp_path / "plain")
    windows = tmp_path / "windows.txt"
    windows.write_bytes(codecs.BOM_UTF8 + "".join(f"{e}\t{d}\r\n" for e, d in rows).encode())
    assert make_split(windows, tmp_path / "windows") == plain
    assert tatoeba.parse_pairs(codecs.BOM_UTF8 + b"Come on.\tKomm schon.\n", "deu.txt") == \
        [tatoeba.Pair("Come on.", "Komm schon.")]


@pytest.mark.parametrize("content, expected", [
    (b"Hi.\tHallo!\nCome\ron.\tKomm schon.\n",
     r"deu.txt line 2: a line break '\\r' inside the line \(character 5\); expected one pair "
     r"per line, each line ending in \\n or \\r\\n"),
    ("Hi.\tHallo!\nGo.\tGeh\u2028weg.\r\n".encode(),
     r"deu.txt line 2: a line break '\\u2028' inside the line \(character 8\)"),
])
def test_a_line_break_inside_a_line_is_refused_with_its_line(tmp_path, content, expected):
    """Later tools (Python's text files, str.splitlines) would split such a line in two and
    the two languages would no longer be line-parallel: refused by the check, by line."""
    bad = tmp_path / "deu.txt"
    bad.write_bytes(content)
    with pytest.raises(SystemExit) as refused:
        tatoeba.main(["check", "--from", str(bad)])
    assert re.search(expected, str(refused.value.code)), refused.value.code


@pytest.mark.parametrize("damage, expected", [
    ("truncated", "a damaged or truncated archive"),
    ("a flipped byte", "a damaged or truncated archive"),
    ("a web page", "not a zip archive (it begins b'<html>"),
])
def test_a_damaged_zip_is_refused_as_such(tmp_path, damage, expected):
    export = write_export(tmp_path / "deu.txt", synthetic_export())
    archive = tmp_path / "deu-eng.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(export, "deu.txt")
    data = archive.read_bytes()
    middle = len(data) // 2
    archive.write_bytes({"truncated": data[:middle],
                         "a flipped byte": data[:middle] + bytes([data[middle] ^ 0xFF])
                         + data[middle + 1:],
                         "a web page": b"<html>please use a browser</html>"}[damage])
    with pytest.raises(SystemExit) as refused:
        tatoeba.main(["check", "--from", str(archive)])
    message = str(refused.value.code)
    assert message.startswith(f"error: {archive}: {expected}"), message
    assert "expected the zip archive as downloaded" in message and "UTF-8" not in message


def closed_port():
    """A local port that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_download_without_a_network_fails_in_one_line_saying_how_to_place_the_file(tmp_path):
    out = tmp_path / "raw" / "deu-eng.zip"
    url = f"http://127.0.0.1:{closed_port()}/deu-eng.zip"
    proc = run([sys.executable, "-m", "relpos_recipes.tools.tatoeba", "download", "--url", url, "--out", out],
               env={"RELPOS_FETCH_RETRIES": "1"}, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        f"error: could not download {url} ([Errno 111] Connection refused); download it with a "
        f"web browser and save it as {out} (or pass it to prepare-tatoeba.sh --from), then re-run")
    assert not out.exists() and not list(out.parent.glob("*"))


def test_download_never_replaces_a_file(tmp_path):
    mine = tmp_path / "deu-eng.zip"
    mine.write_text("my notes")
    with pytest.raises(SystemExit, match=f"{mine} exists; expected a new file for the download"):
        tatoeba.main(["download", "--url", f"http://127.0.0.1:{closed_port()}/deu-eng.zip",
                      "--out", str(mine)])
    assert mine.read_text() == "my notes"
