"""Any parallel corpus (scripts/prepare-corpus.sh, relpos_recipes.tools.user_corpus): the check of the
user's files by file and line, the dev set held out of the training pairs, the refusals of the
command line before any folder is made, and one small corpus prepared end to end (taken as
tokenized, with a length band and the concatenation augmentation)."""
import codecs
import json
import re

import pytest

from relpos_recipes.__main__ import main as recipe
from relpos_recipes.tools import user_corpus
from test_pipelines import SCRIPTS, lines, run


def write_pair(prefix, src_lines, tgt_lines, src="de", tgt="en"):
    for lang, rows in ((src, src_lines), (tgt, tgt_lines)):
        data = rows if isinstance(rows, bytes) else "".join(f"{row}\n" for row in rows).encode()
        (prefix.parent / f"{prefix.name}.{lang}").write_bytes(data)
    return prefix


@pytest.mark.parametrize("src, tgt, expected", [
    (["a b", "c d", "e"], ["A B", "C D"], r"train\.de line 3: no partner on the other side \(.*train\.de has 3 lines, "
                                         r".*train\.en 2\); expected one line per pair on both sides"),
    (["a b", "   ", "e"], ["A B", "C", "E"], r"train\.de line 2: empty; expected a sentence on every line"),
    (["a b", "c"], ["A B", ""], r"train\.en line 2: empty"),
    (b"a b\nc \xff d\n", ["A B", "C D"], r"train\.de line 2: byte 3 is not UTF-8 \(b'\\xff'\); expected UTF-8 text"),
    (["a b", "c\u2028d"], ["A B", "C D"], r"train\.de line 2: a line break '\\u2028' inside the line \(character 2\); "
                                         r"expected one sentence per line"),
    (b"", ["A"], r"train\.de: empty file \(expected one sentence per line\)"),
])
def test_a_malformed_corpus_is_refused_by_file_and_line(tmp_path, src, tgt, expected):
    prefix = write_pair(tmp_path / "train", src, tgt)
    with pytest.raises(user_corpus.MalformedFile) as refused:
        user_corpus.parallel_pairs(f"{prefix}.de", f"{prefix}.en")
    assert re.search(expected, str(refused.value)), refused.value


def test_a_byte_order_mark_and_crlf_line_ends_are_no_part_of_the_sentences(tmp_path):
    prefix = write_pair(tmp_path / "win", codecs.BOM_UTF8 + b"Guten Tag.\r\nDanke.\r\n", ["Good day.", "Thanks."])
    assert user_corpus.parallel_pairs(f"{prefix}.de", f"{prefix}.en") == [("Guten Tag.", "Good day."),
                                                                      ("Danke.", "Thanks.")]
    out = tmp_path / "out"
    assert user_corpus.main(["take", "--src", f"{prefix}.de", "--tgt", f"{prefix}.en", "--out-src", f"{out}.de",
                        "--out-tgt", f"{out}.en"]) == 0
    assert (tmp_path / "out.de").read_bytes() == b"Guten Tag.\nDanke.\n"


def test_the_held_out_dev_set_is_drawn_within_the_limit_from_the_seed(tmp_path):
    """Pairs of 1 to 20 words; 10 held out within 8 words, the same for the same seed, others
    for another, and the training set is every other pair in the file's order."""
    rows = [" ".join(f"w{k}" for k in range(1 + n % 20)) + f" s{n}" for n in range(200)]
    prefix = write_pair(tmp_path / "train", rows, [row.upper() for row in rows])

    def take(seed, out):
        user_corpus.main(["take", "--src", f"{prefix}.de", "--tgt", f"{prefix}.en", "--out-src", str(out / "train.de"),
                     "--out-tgt", str(out / "train.en"), "--hold-out", "10", "--max-len", "8", "--seed", str(seed),
                     "--dev-src", str(out / "dev.de"), "--dev-tgt", str(out / "dev.en")])
        return lines(out / "dev.de"), lines(out / "train.de")

    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    dev, train = take(1, tmp_path / "a")
    assert len(dev) == 10 and all(len(row.split()) <= 8 for row in dev)
    assert sorted(dev + train) == sorted(rows) and train == [row for row in rows if row not in dev]
    assert dev == [row for row in rows if row in dev]  # in the file's order
    assert take(1, tmp_path / "b")[0] == dev and take(2, tmp_path / "c")[0] != dev
    assert lines(tmp_path / "a" / "dev.en") == [row.upper() for row in dev]


def test_too_few_pairs_within_the_limit_to_hold_out_is_refused(tmp_path):
    prefix = write_pair(tmp_path / "train", ["a b c d e f g h i j"] * 30 + ["a"] * 5, ["x"] * 35)
    with pytest.raises(SystemExit, match="35 pairs, 5 of them within 8: too few to hold out 10 dev pairs"):
        user_corpus.main(["take", "--src", f"{prefix}.de", "--tgt", f"{prefix}.en", "--out-src", str(tmp_path / "o.de"),
                     "--out-tgt", str(tmp_path / "o.en"), "--hold-out", "10", "--max-len", "8",
                     "--dev-src", str(tmp_path / "d.de"), "--dev-tgt", str(tmp_path / "d.en")])


def prepare(tmp_path, *options):
    return ["prepare-corpus", "--train", str(tmp_path / "train"), "--src-lang", "de", "--tgt-lang", "en",
            "--train-limit", "20", "--out-dir", str(tmp_path / "prepared"), *map(str, options)]


@pytest.mark.parametrize("options, message", [
    ([], "--test NAME=PREFIX is required"),
    (["--test", "concat_seq={train}"], "--test concat_seq="),
    (["--test", "t={train}", "--test", "t={train}"], "--test names t twice"),
    (["--test", "t={train}", "--spm-vocab", "100"], "--spm-vocab is for --segmentation spm, not bpe"),
    (["--test", "t={train}", "--dev", "{train}", "--dev-pairs", "5"], "--dev-pairs is the size of the dev set held out"),
    (["--test", "t={train}", "--concat-share", "0.5"], "--concat-share is the share of --concat-augment"),
    (["--test", "t={train}", "--train-band", "1:10", "--train-band", "5:12"], "--train-band: the bands 1:10 and 5:12 overlap"),
    (["--test", "t={train}", "--train-band", "10:1"], "--train-band: expected a length band LO:HI with 1 <= LO <= HI"),
    (["--test", "t={tmp}/absent"], "--test t {tmp}/absent: {tmp}/absent.de: no such file"),
    (["--test", "t={tmp}/bad"], "--test t {tmp}/bad: {tmp}/bad.en line 2: no partner on the other side"),
])
def test_prepare_corpus_refuses_bad_options_and_files_before_any_folder_is_made(tmp_path, capsys, options, message):
    write_pair(tmp_path / "train", ["a b"] * 50, ["A B"] * 50)
    write_pair(tmp_path / "bad", ["a"], ["A", "B"])
    given = [o.format(train=tmp_path / "train", tmp=tmp_path) for o in options]
    assert recipe(prepare(tmp_path, *given)) == 1
    assert message.format(tmp=tmp_path) in capsys.readouterr().err
    assert not (tmp_path / "prepared").exists()


def test_a_test_set_inside_the_training_data_is_counted_and_refused_by_name_unless_allowed(tmp_path, capsys):
    """Each test set's pairs (and sources) found in the training pairs are printed; more than
    1% of its pairs refuses the preparation before any folder is made, naming the set, unless
    --allow-overlap, and the counts are recorded in the prepared folder (overlap.env).  Pairs
    held out of --train as the dev set are no training pairs."""
    rows = [f"s{k} a b" for k in range(300)]
    write_pair(tmp_path / "train", rows, [row.upper() for row in rows])
    held = user_corpus.hold_out([(row, row.upper()) for row in rows], 50, 20, ("word", "word"), 1)
    train = [row for k, row in enumerate(rows) if k not in held]
    tests = {"clean": ([f"t{k} x" for k in range(100)], [f"T{k} X" for k in range(100)]),
             # one pair of the training data (1%), and sources the training data translates otherwise
             "sources": ([train[0]] + train[10:15] + [f"t{k}" for k in range(94)],
                         [train[0].upper()] + ["other"] * 5 + [f"T{k}" for k in range(94)]),
             "leaky": (train[:2] + [f"t{k}" for k in range(98)], [row.upper() for row in train[:2]] + ["T"] * 98)}
    options = ["--dev-pairs", "50"]
    for name, (src, tgt) in tests.items():
        options += ["--test", f"{name}={write_pair(tmp_path / name, src, tgt)}"]
    assert recipe(prepare(tmp_path, *options)) == 1
    err = capsys.readouterr().err
    assert "--test clean: 0 of its 100 pairs (0.0%) and 0 of its sources occur in the training data" in err
    assert "--test sources: 1 of its 100 pairs (1.0%) and 6 of its sources occur in the training data" in err
    assert (f"error: --test leaky {tmp_path / 'leaky'}: 2 of its 100 pairs (2.0%) and 2 of its sources occur in the "
            "training data, more than 1%") in err and "--allow-overlap" in err
    assert not (tmp_path / "prepared").exists()
    assert recipe(prepare(tmp_path, *options, "--allow-overlap", "--dry-run")) == 0
    planned = capsys.readouterr().out
    assert re.search(r"\[run \(not run before\)\] record the test sets' overlap with the training data\n.* "
                     r"ALLOW_OVERLAP=1 'TEST_clean=pairs 0 sources 0 of 100' 'TEST_sources=pairs 1 sources 6 of 100' "
                     r"'TEST_leaky=pairs 2 sources 2 of 100'", planned), planned
    # the pairs of the training file held out as the dev set: a test set of them is no overlap
    write_pair(tmp_path / "leaky", [rows[k] for k in held], [rows[k].upper() for k in held])
    assert recipe(prepare(tmp_path, *options, "--dry-run")) == 0
    assert "--test leaky: 0 of its 50 pairs (0.0%)" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tokenized_corpus_prepared_with_a_band_and_the_concatenation_augmentation(tmp_path):
    """--segmentation none: the text is what the model reads (no BPE, nothing normalised); the
    dev set is held out; the band's training and dev pairs, the augmented data and the test
    sets are where train.sh and translate.sh expect them; a re-run does nothing."""
    rows = [" ".join(f"w{(n * 7 + k) % 23}" for k in range(2 + n % 14)) for n in range(400)]
    write_pair(tmp_path / "train", rows, [row.replace("w", "v") + " ." for row in rows])
    test = [" ".join(f"w{k}" for k in reversed(range(n))) for n in range(2, 32)]  # none a training pair
    write_pair(tmp_path / "test", test, [row.replace("w", "v") + " ." for row in test])
    command = ["bash", SCRIPTS / "prepare-corpus.sh", *prepare(tmp_path, "--test", f"long={tmp_path / 'test'}",
                                                               "--segmentation", "none", "--dev-pairs", "40",
                                                               "--train-band", "6:10", "--concat-augment",
                                                               "--threads", "1")[1:]]
    out = run(command).stdout
    work = tmp_path / "prepared"
    assert "length band 6:10 (longer side, subword tokens): kept" in out
    assert lines(work / "seg" / "valid.de") == lines(work / "split" / "dev.de")
    assert len(lines(work / "split" / "dev.de")) == 40 and len(lines(work / "split" / "train.de")) == 360
    assert lines(work / "seg" / "train.de") == lines(work / "split" / "train.de")  # as it is
    for split in ("train", "valid"):
        pairs = zip(lines(work / "band6-10" / f"{split}.de"), lines(work / "band6-10" / f"{split}.en"))
        assert all(6 <= max(len(s.split()), len(t.split())) <= 10 for s, t in pairs)
    concat = json.loads((work / "len20-concat" / "concat.json").read_text())
    augmented = lines(work / "len20-concat" / "train.en")
    assert augmented[:concat["pairs"]] == lines(work / "len20" / "train.en")
    assert len(augmented) == concat["pairs"] + concat["joined"] > concat["pairs"]
    assert all(len(row.split()) <= 20 for row in augmented)
    for name in ("band6-10", "len20", "len20-concat"):
        assert (work / "data-bin" / name / "shard0" / "train.de-en.de.bin").is_file()
    assert lines(work / "testsets" / "long" / "raw.en") == [row.replace("w", "v") + " ." for row in test]
    assert len(lines(work / "testsets" / "concat_seq" / "raw.de")) == 15
    assert "TEST_long=pairs 0 sources 0 of 30" in (work / "overlap.env").read_text()
    again = run(command)
    assert "start " not in again.stderr, again.stderr
    # the recipes take the folder, and find the band and the augmented data they need made
    bands = run(["bash", SCRIPTS / "reproduce/bands.sh", "--data", work, "--bands", "6:10", "--test-bands", "6:10,11:20",
                 "--systems", "transformer_abs", "--out-dir", tmp_path / "bands", "--dry-run"]).stdout
    assert "[done] training pairs in the band 6:10" in bands and "[done] binarize band6-10" in bands
    assert f"fairseq-train {work}/data-bin/band6-10/shard0" in bands
    assert f"--ref {work}/testsets/long/raw.en --length-file {work}/testsets/long/longer-side" in bands
    assert "--tokenize none" in bands  # taken as tokenized: scored on its tokens
    board = run(["bash", SCRIPTS / "leaderboard.sh", "--data", work, "--systems", "transformer_abs", "--concat-systems",
                 "transformer_abs", "--quick", "--seeds", "1", "--out-dir", tmp_path / "board", "--dry-run"]).stdout
    # the folder's own augmentation, as it was prepared
    assert "concatenation augmentation" not in board and f"fairseq-train {work}/data-bin/len20-concat/shard0" in board


def test_the_script_has_its_help():
    out = run(["bash", SCRIPTS / "prepare-corpus.sh", "--help"]).stdout
    assert "Usage:" in out and "--train-band LO:HI" in out and "--concat-augment" in out
