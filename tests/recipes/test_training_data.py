"""What a preparation keeps besides the pairs within the limit: a length band
(relpos_recipes.tools.filter_pairs --band) and the concatenation augmentation
(relpos_recipes.tools.concat_augment), on hand-made files, in-process; the length filter's
counts and a test set's sentences joined by two or three (text.py concat-lines), through their
command lines."""
import json
import random
import sys

import pytest

from relpos_analysis.buckets import Bucket, parse_band, parse_bands
from relpos_analysis.io import InputError
from relpos_recipes.tools import concat_augment, filter_pairs
from relpos_recipes.tools.text import joined
from conftest import run_command as run
from test_pipelines import lines, tool


def write(path, rows):
    path.write_text("".join(f"{row}\n" for row in rows), encoding="utf-8")
    return path


def sentence(n, word="w"):
    return " ".join(f"{word}{k}" for k in range(n))


# pairs (source tokens, target tokens)
LENGTHS = [(3, 5), (5, 3), (6, 6), (10, 2), (2, 10), (11, 4), (4, 11), (8, 9)]


def band_filter(tmp_path, band, side=None):
    src = write(tmp_path / "in.de", [sentence(s) for s, _ in LENGTHS])
    tgt = write(tmp_path / "in.en", [sentence(t, "v") for _, t in LENGTHS])
    argv = ["--src", str(src), "--tgt", str(tgt), "--out-src", str(tmp_path / "out.de"),
            "--out-tgt", str(tmp_path / "out.en"), "--band", band, "--report", str(tmp_path / "filter.txt")]
    filter_pairs.main(argv + (["--band-side", side] if side else []))
    return [(len(s.split()), len(t.split())) for s, t in zip(lines(tmp_path / "out.de"), lines(tmp_path / "out.en"))]


@pytest.mark.parametrize("band, side, kept", [
    ("5:10", None, [(3, 5), (5, 3), (6, 6), (10, 2), (2, 10), (8, 9)]),  # the longer side, both ends included
    ("5:10", "longer", [(3, 5), (5, 3), (6, 6), (10, 2), (2, 10), (8, 9)]),
    ("5:10", "source", [(5, 3), (6, 6), (10, 2), (8, 9)]),
    ("5:10", "target", [(3, 5), (6, 6), (2, 10), (8, 9)]),
    ("11:11", None, [(11, 4), (4, 11)]),
])
def test_a_band_keeps_the_pairs_whose_length_on_its_side_is_in_it(tmp_path, band, side, kept):
    assert band_filter(tmp_path, band, side) == kept
    stats = json.loads((tmp_path / "filter.json").read_text())
    assert stats["band"] == band and stats["band_side"] == (side or "longer") and stats["kept"] == len(kept)


def test_a_band_that_keeps_no_pair_is_an_error_naming_the_files_and_their_lengths(tmp_path):
    with pytest.raises(SystemExit, match=r"no pair of .*in\.de and .*in\.en is in the length band 20:30 \(length of "
                                         r"the longer side; the files have lengths 5 to 11\)"):
        band_filter(tmp_path, "20:30")


@pytest.mark.parametrize("text, message", [
    ("10", "expected a length band LO:HI"), ("0:5", "with 1 <= LO <= HI"), ("7:3", "with 1 <= LO <= HI"),
    ("a:b", "expected a length band"),
])
def test_a_malformed_band_is_refused(text, message):
    with pytest.raises(InputError, match=message):
        parse_band(text)


def test_bands_must_not_overlap():
    assert parse_bands("1:10, 11:20") == [Bucket(1, 10), Bucket(11, 20)]
    with pytest.raises(InputError, match="the bands 1:10 and 10:20 overlap"):
        parse_bands("10:20,1:10")


# ----------------------------------------------------------------------------------------
# the concatenation augmentation
# ----------------------------------------------------------------------------------------
def test_every_joined_pair_fits_the_limit_and_joins_two_different_pairs():
    rng = random.Random(3)
    src = [rng.randint(1, 30) for _ in range(500)]
    tgt = [n + rng.randint(-3, 6) for n in src]
    made = concat_augment.join_pairs(src, tgt, 40, 1.0, seed=7)
    assert made and all(first != partner for first, partner in made)
    assert all(src[a] + src[b] <= 40 and tgt[a] + tgt[b] <= 40 for a, b in made)
    assert len({first for first, _ in made}) == len(made)  # a pair is offered a partner once
    # a pair that cannot fit with any other is never joined
    assert all(src[a] + min(src) <= 40 for a, _ in made)


def test_the_joined_pairs_come_from_the_seed_and_the_share():
    src = [n % 12 + 1 for n in range(300)]
    made = concat_augment.join_pairs(src, src, 20, 1.0, seed=1)
    assert concat_augment.join_pairs(src, src, 20, 1.0, seed=1) == made
    assert concat_augment.join_pairs(src, src, 20, 1.0, seed=2) != made
    half = concat_augment.join_pairs(src, src, 20, 0.5, seed=1)
    assert len(half) <= 150 < len(made)


def test_a_pair_with_no_partner_that_fits_in_its_tries_is_left_alone():
    # every pair of 15 tokens: no two fit in 20
    assert concat_augment.join_pairs([15] * 50, [15] * 50, 20, 1.0, seed=1) == []
    assert concat_augment.join_pairs([3], [3], 20, 1.0, seed=1) == []  # no other pair


def test_the_tool_writes_the_pairs_then_the_joined_ones_side_by_side(tmp_path):
    src = [sentence(1 + n % 6) + f" s{n}" for n in range(40)]
    tgt = [sentence(1 + n % 6, "v") + f" t{n}" for n in range(40)]
    write(tmp_path / "train.de", src)
    write(tmp_path / "train.en", tgt)
    concat_augment.main(["--src", str(tmp_path / "train.de"), "--tgt", str(tmp_path / "train.en"), "--max-len", "9",
                         "--seed", "4", "--out-src", str(tmp_path / "out.de"), "--out-tgt", str(tmp_path / "out.en"),
                         "--report", str(tmp_path / "concat.txt")])
    made = concat_augment.join_pairs([len(s.split()) for s in src], [len(t.split()) for t in tgt], 9, 1.0, 4)
    assert lines(tmp_path / "out.de") == src + [joined((src[a], src[b])) for a, b in made]
    assert lines(tmp_path / "out.en") == tgt + [joined((tgt[a], tgt[b])) for a, b in made]
    stats = json.loads((tmp_path / "concat.json").read_text())
    assert stats["pairs"] == 40 and stats["joined"] == len(made) > 0
    assert f"{len(made)} joined pairs within 9 tokens added" in (tmp_path / "concat.txt").read_text()


def test_concat_seq_and_the_augmentation_join_sentences_alike(tmp_path):
    """A joined training pair is what concat_seq makes of two test pairs."""
    from relpos_recipes.tools import text

    write(tmp_path / "two.de", ["a b .", "c d ."])
    text.main(["concat-lines", "--n", "2", "--input", str(tmp_path / "two.de"), "--out", str(tmp_path / "joined.de")])
    assert lines(tmp_path / "joined.de") == [joined(("a b .", "c d ."))] == ["a b . c d ."]


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


def test_concat_lines_by_two_and_three(tmp_path):
    (tmp_path / "odd").write_text("1\n2\n3\n4\n5\n")
    (tmp_path / "even").write_text("a b\nc\n")
    for n, source, out in ((2, "odd", "odd.cat"), (2, "even", "even.cat"), (3, "odd", "odd.cat3"), (3, "even", "even.cat3")):
        tool("concat-lines", "--n", n, "--input", tmp_path / source, "--out", tmp_path / out)
    assert lines(tmp_path / "odd.cat") == ["1 2", "3 4", "5"]
    assert lines(tmp_path / "even.cat") == ["a b c"]
    assert lines(tmp_path / "odd.cat3") == ["1 2 3", "4 5"]
    assert lines(tmp_path / "even.cat3") == ["a b c"]
