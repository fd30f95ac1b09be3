"""relpos_recipes.tools.binarize writes what fairseq-preprocess writes, byte for byte: the
dictionaries, every split's .bin and .idx, and its sentence, token and <unk> counts, on real
text (the newstest sets where ../shared is, with lines of tabs, runs of spaces, a lone
carriage return and words the dictionary lacks), across blocks and workers, and with a
dictionary large enough for 32-bit tokens.  fairseq-preprocess runs here in this process."""
import re

import pytest

from conftest import SHARED, fairseq_in_process
from relpos_recipes.tools import binarize

NEWSTEST = SHARED / "data" / "wmt-newstest" / "de-en"
ODD_LINES = ["", "  zwei   Leer\tzeichen  ", "ein\rHaus", "Ende\u00a0gut", "unbekannt@@ es Wort ."]


def fairseq_preprocess(*argv):
    """fairseq-preprocess in this process; what it logged, line by line."""
    return fairseq_in_process("fairseq-preprocess", *argv).splitlines()


def text(tmp_path, lines_per_side):
    """Real sentences where ../shared has them (else generated ones), with the odd lines."""
    sides = {}
    for lang in ("de", "en"):
        if NEWSTEST.is_dir():
            real = (NEWSTEST / f"newstest2014.{lang}").read_text(encoding="utf-8").split("\n")[:lines_per_side]
        else:
            # a word of its own every third line: the second half has words the first lacks
            real = [" ".join([f"w{(i * 7 + j) % 97}" for j in range(i % 23)] + [f"v{i}"] * (i % 3 == 0))
                    for i in range(lines_per_side)]
        sides[lang] = real[:100] + ODD_LINES + real[100:]
        (tmp_path / f"text.{lang}").write_text("\n".join(sides[lang]) + "\n", encoding="utf-8")
    return sides


def same_folders(ours, theirs):
    names = sorted(p.name for p in theirs.iterdir())
    assert sorted(p.name for p in ours.iterdir()) == names
    for name in names:
        if name != "preprocess.log":
            assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


def said(lines):
    """The lines about each side's dictionary and files (fairseq's after its log prefix)."""
    return [m.group(0) for m in map(re.compile(r"\[(de|en)\] .*").search, lines) if m]


def test_a_test_set_is_binarized_as_fairseq_preprocess_binarizes_it(tmp_path, capsys):
    text(tmp_path, 800)
    # a dictionary of the first half (the rest has words it lacks, replaced by <unk>)
    for lang in ("de", "en"):
        lines = (tmp_path / f"text.{lang}").read_text(encoding="utf-8").split("\n")
        (tmp_path / f"half.{lang}").write_text("\n".join(lines[:400]) + "\n", encoding="utf-8")
    fairseq_preprocess("--source-lang", "de", "--target-lang", "en", "--trainpref", tmp_path / "half",
                       "--destdir", tmp_path / "dict", "--dict-only")
    dicts = [tmp_path / "dict" / f"dict.{lang}.txt" for lang in ("de", "en")]
    common = ["--source-lang", "de", "--target-lang", "en", "--srcdict", dicts[0], "--tgtdict", dicts[1]]
    logged = fairseq_preprocess(*common, "--testpref", tmp_path / "text", "--validpref", tmp_path / "half",
                                "--destdir", tmp_path / "fairseq")
    capsys.readouterr()
    binarize.main([*map(str, common), "--testpref", str(tmp_path / "text"), "--validpref", str(tmp_path / "half"),
                   "--destdir", str(tmp_path / "ours")])
    same_folders(tmp_path / "ours", tmp_path / "fairseq")
    ours = said(capsys.readouterr().err.splitlines())
    assert ours == said(logged) and len(ours) == 8
    assert re.search(r"text\.de: \d+ sents, \d+ tokens, [1-9][\d.]*% replaced \(by <unk>\)", "\n".join(ours))
    assert said((tmp_path / "ours" / "preprocess.log").read_text().splitlines()) == ours


def test_blocks_workers_and_32_bit_tokens_change_nothing(tmp_path, monkeypatch):
    """Lines read, encoded and written a few at a time by three workers; a dictionary of 70,000
    words, which fairseq stores as uint32 (and an entry flagged #fairseq:overwrite)."""
    sides = text(tmp_path, 300)
    words = sorted({w for line in sides["de"] for w in line.split()})
    big = tmp_path / "big.txt"
    big.write_text("".join(f"{w} 5\n" for w in words[::2]) + "".join(f"x{i} 1\n" for i in range(70_000))
                   + f"{words[2]} 3 #fairseq:overwrite\n", encoding="utf-8")
    common = ["--source-lang", "de", "--target-lang", "en", "--srcdict", big, "--tgtdict", big,
              "--testpref", tmp_path / "text"]
    fairseq_preprocess(*common, "--destdir", tmp_path / "fairseq")
    monkeypatch.setattr(binarize, "LINES_PER_BLOCK", 7)
    binarize.main([*map(str, common), "--destdir", str(tmp_path / "ours"), "--workers", "3"])
    same_folders(tmp_path / "ours", tmp_path / "fairseq")
    assert binarize.Vocabulary(str(big)).token_dtype() is binarize.np.uint32


def test_a_malformed_dictionary_is_refused_by_line(tmp_path):
    (tmp_path / "t.de").write_text("a b\n")
    (tmp_path / "t.en").write_text("a b\n")
    for content, why in (("a 1\nb\n", "line 2: 'b' is not a dictionary entry"),
                         ("a 1\na 2\n", "line 2: 'a' is in the dictionary already"),
                         ("<unk> 4\n", "line 1: '<unk>' is in the dictionary already")):
        (tmp_path / "d.txt").write_text(content)
        with pytest.raises(SystemExit, match=re.escape(f"error: {tmp_path / 'd.txt'}, {why}")):
            binarize.main(["--source-lang", "de", "--target-lang", "en", "--srcdict", str(tmp_path / "d.txt"),
                           "--tgtdict", str(tmp_path / "d.txt"), "--testpref", str(tmp_path / "t"),
                           "--destdir", str(tmp_path / "out")])
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.bin"))


def test_dictionaries_are_built_as_fairseq_preprocess_builds_them(tmp_path, monkeypatch):
    """--dict-only: every word by count, ties in code point order, the special symbols' own
    lines left out, padded with madeupwordNNNN (one of which the text has already), by one
    worker or by three over blocks of a few lines."""
    sides = text(tmp_path, 500)
    with open(tmp_path / "text.de", "a", encoding="utf-8") as f:
        f.write("<unk> </s> madeupword0000 madeupword0000 b a b a\n")
    common = ["--source-lang", "de", "--target-lang", "en", "--trainpref", tmp_path / "text", "--dict-only"]
    fairseq_preprocess(*common, "--destdir", tmp_path / "fairseq")
    binarize.main([*map(str, common), "--destdir", str(tmp_path / "ours")])
    same_folders(tmp_path / "ours", tmp_path / "fairseq")
    monkeypatch.setattr(binarize, "LINES_PER_BLOCK", 7)
    binarize.main([*map(str, common), "--destdir", str(tmp_path / "three"), "--workers", "3"])
    same_folders(tmp_path / "three", tmp_path / "fairseq")
    assert len(sides["de"]) > 500 and "madeupword0000 2\n" in (tmp_path / "ours" / "dict.de.txt").read_text()
