"""The failure columns, the drop, oracle-length decoding and bucketing by any side through
relpos-report and relpos-leaderboard, in every output format, with their refusals; failed
systems in every report format; the records as pandas DataFrames (relpos_analysis.frames)."""
import csv
import json
import random

import pandas as pd
import pytest

from relpos_analysis import leaderboard, load_board, load_report, report
from relpos_analysis.frames import QUANTITIES
from relpos_analysis.io import InputError
from relpos_analysis.textcheck import check_segmented_form

LIMIT = 12
N = 120


def write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A segmented source and reference of 3-30 tokens; translations that copy the reference
    ("good"), stop after a third beyond the limit ("cut"), or loop there ("loops"); "cut"
    decoded with oracle lengths; each with a second seed and log-probabilities, and the
    translations' segmented forms (here the same text)."""
    folder = tmp_path_factory.mktemp("failures")
    rng = random.Random(11)
    words = [f"w{i}" for i in range(80)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 30))) for _ in range(N)]
    source = [" ".join(reversed(ref.split()[: max(1, len(ref.split()) - 2)])) for ref in refs]
    systems = {
        "good": refs,
        "cut": [ref if len(ref.split()) <= LIMIT else " ".join(ref.split()[:len(ref.split()) // 3]) for ref in refs],
        "loops": [ref if len(ref.split()) <= LIMIT else " ".join(ref.split()[:-6] + ["la", "li"] * 3)
                  for ref in refs],
    }
    systems["cut-oracle"] = [ref.replace("w1 ", "w2 ") for ref in refs]
    paths = {"src": write(folder / "src", source), "ref": write(folder / "ref", refs)}
    for name, hyps in systems.items():
        for seed in (1, 2):
            paths[name, seed] = write(folder / f"{name}.{seed}.txt", hyps if seed == 1 else hyps[::-1][::-1])
            paths[name, seed, "scores"] = write(folder / f"{name}.{seed}.scores",
                                                [f"{-rng.uniform(0.1, 2):.4f}" for _ in refs])
    return folder, paths, refs, systems


def report_args(paths, names=("good", "cut", "loops", "cut-oracle"), *extra):
    args = ["--source", paths["src"], "--ref", paths["ref"], "--tokenize", "none", "--metrics", "bleu,ter",
            "--bootstrap", "50", "--edges", f"8,{LIMIT},20", "--no-cache"]
    for name in names:
        args += ["--system", f"{name}={paths[name, 1]}"]
    return args + list(extra)


def test_every_report_format_has_the_new_columns(files, tmp_path, capsys):
    folder, paths, refs, systems = files
    out = tmp_path / "report"
    args = report_args(paths) + ["--train-limit", str(LIMIT), "--oracle-decoding", "cut-oracle=cut",
                                 "--out-dir", str(out), "--failed", "huang3=seed 1: diverged"]
    args += [a for name in systems for a in ("--system-scores", f"{name}={paths[name, 1, 'scores']}")]
    assert report.main(args) == 0
    markdown = capsys.readouterr().out
    for title in ("## Failures per length bucket", "## Drop beyond the training limit (12 tokens)",
                  "## Free and oracle-length decoding"):
        assert title in markdown
    assert "| G21:∞ log2 p/token |" in markdown
    assert markdown.endswith("Not in this report, because they failed:\n\n- huang3: seed 1: diverged\n")

    records = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cut_beyond = next(r for r in records if r["system"] == "cut" and r["bucket"] == "G21:∞")
    assert cut_beyond["short"] == 100.0 and cut_beyond["bleu_drop"] < -50
    assert cut_beyond["short_drop_ci_lo"] is not None and cut_beyond["logprob_ci_lo"] is not None
    gain = next(r for r in records if r["system"] == "cut-oracle" and r["bucket"] == "G21:∞")
    assert gain["oracle_of"] == "cut" and gain["bleu_oracle_gain"] > 50 and gain["bleu_oracle_gain_p"] < 0.05
    assert records[-1] == {"system": "huang3", "baseline": "good", "bucket": None, "bucket_lo": None,
                           "bucket_hi": None, "n": None, "failure": "seed 1: diverged"}
    with open(out / "report.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {"loop", "loop_ci_lo", "loop_p", "bleu_drop", "bleu_oracle_gain_p", "failure"} <= set(rows[0])
    assert rows[-1]["system"] == "huang3" and rows[-1]["failure"] == "seed 1: diverged"
    latex = (out / "report.tex").read_text(encoding="utf-8")
    assert latex.count("\\begin{table}") == 4 and "huang3: seed 1: diverged" in latex
    for name in ("failures", "oracle"):
        assert (out / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert (out / f"{name}.pdf").read_bytes().startswith(b"%PDF")


def test_failed_systems_are_in_every_report_format(files, tmp_path, capsys):
    """Before, --failed reached the markdown only: JSON, CSV and LaTeX dropped the system."""
    _, paths, _, _ = files
    out = tmp_path / "report"
    assert report.main(report_args(paths, ("good",)) + ["--failed", "rel=refused long inputs",
                                                        "--out-dir", str(out)]) == 0
    capsys.readouterr()
    assert "rel" in [r["system"] for r in json.loads((out / "report.json").read_text()) if r["failure"]]
    assert "refused long inputs" in (out / "report.csv").read_text()
    assert "rel: refused long inputs" in (out / "report.tex").read_text()
    assert "- rel: refused long inputs" in (out / "report.md").read_text()


def sizes(out):
    """Each system's bucket sizes, from the report's records."""
    by_system = {}
    for record in json.loads((out / "report.json").read_text()):
        if record["bucket"] != "all":
            by_system.setdefault(record["system"], []).append(record["n"])
    return by_system


def counts(lengths, edges=(8, LIMIT, 20)):
    lows = [0] + [edge + 1 for edge in edges]
    highs = list(edges) + [10**9]
    return [sum(lo <= n <= hi for n in lengths) for lo, hi in zip(lows, highs)]


def test_lengths_by_any_side(files, tmp_path, capsys):
    folder, paths, refs, systems = files
    source_lengths = [len(line.split()) for line in (folder / "src").read_text().splitlines()]
    reference_lengths = [len(ref.split()) for ref in refs]
    names = ("good", "cut")
    expected = {
        "source": {name: counts(source_lengths) for name in names},
        "reference": {name: counts(reference_lengths) for name in names},
        "longer": {name: counts([max(a, b) for a, b in zip(source_lengths, reference_lengths)]) for name in names},
        "hypothesis": {name: counts([len(hyp.split()) for hyp in systems[name]]) for name in names},
    }
    for side, by_system in expected.items():
        out = tmp_path / side
        assert report.main(report_args(paths, names, "--length-by", side, "--json", str(out / "report.json"))) == 0
        assert sizes(out) == by_system, side
    # the segmented forms, given as files, count the same here
    out = tmp_path / "segmented"
    assert report.main(report_args(paths, names, "--length-by", "hypothesis", "--json", str(out / "report.json"),
                                   *[a for name in names for a in ("--system-lengths", f"{name}={paths[name, 2]}")])) == 0
    assert sizes(out) == expected["hypothesis"]
    out = tmp_path / "old"
    assert report.main(report_args(paths, names, "--by-reference-length", "--json", str(out / "report.json"))) == 0
    assert sizes(out) == expected["reference"]
    table = capsys.readouterr().out
    assert "| *sentences* of cut |" in table


@pytest.mark.parametrize("extra, message", [
    (["--system-lengths", "good={good}", "--system-lengths", "cut={good}"],
     "--system-lengths gives the translations' lengths: it goes with "
                                          "--length-by hypothesis"),
    (["--length-by", "hypothesis", "--system-lengths", "good={good}"],
     "--system-lengths gives no file for cut: every system or none"),
    (["--length-by", "source", "--reference-lengths", "{ref}"], "--reference-lengths gives the reference's"),
    (["--length-by", "longer", "--length-file", "{src}"], "--length-file already gives the lengths"),
    (["--by-reference-length", "--length-by", "source"], "--by-reference-length is --length-by reference"),
    (["--system-scores", "cut={good}"], "--system-scores gives no file for good: every system or none"),
    (["--system-scores", "other={good}"], "--system-scores other: no --system has that name"),
    (["--system-scores", "good={src}", "--system-scores", "cut={src}"], "--system-scores good: line 1 of"),
    (["--oracle-decoding", "cut=nope"], "--oracle-decoding cut=nope: 'nope' is no --system"),
    (["--oracle-decoding", "cut=cut"], "--oracle-decoding cut=cut: FREE must be a freely decoded system"),
    (["--short-ratio", "0"], "--short-ratio is a share of the reference's length"),
    (["--length-by", "hypothesis", "--system-lengths", "good={cut}", "--system-lengths", "cut={cut}"],
     "--system-lengths good {cut}: 73 of 120 lines are not the segmented form of the translations in {good} (line "),
])
def test_bad_options_are_refused_before_any_work(files, tmp_path, capsys, extra, message):
    _, paths, _, _ = files
    fill = {"good": paths["good", 1], "cut": paths["cut", 1], "ref": paths["ref"], "src": paths["src"]}
    out = tmp_path / "out"
    assert report.main(report_args(paths, ("good", "cut"), *[a.format(**fill) for a in extra],
                                   "--out-dir", str(out))) == 2
    assert capsys.readouterr().err.startswith("error: " + message.format(**fill))
    assert not out.exists()


def test_a_segmented_form_belongs_to_its_translations_whatever_its_segmentation():
    """BPE, SentencePiece pieces, Moses' tokens and XML escapes: the same letters, so the same
    translation; another translation of the sentence is not."""
    text = ["Don't stop-gap, please.", "北京欢迎你", "Hi!"]
    check_segmented_form("hyp.seg", ["Don &apos;t stop @-@ g@@ ap , ple@@ ase .", "\u2581北京 欢迎 你", "Hi !"],
                         "hyp.txt", text, "--system-lengths x")
    with pytest.raises(InputError, match=r"--system-lengths x other.seg: 3 of 3 lines are not the segmented form "
                                         r"of the translations in hyp.txt \(line 1: 'Do not stop , please .' "):
        check_segmented_form("other.seg", ["Do not stop , please .", "\u2581北京", "Hello !"], "hyp.txt", text,
                             "--system-lengths x")


def board_args(paths, names, out, *extra):
    args = ["--source", paths["src"], "--ref", paths["ref"], "--tokenize", "none", "--train-limit", str(LIMIT),
            "--edges", f"{LIMIT},20", "--bootstrap", "50", "--learned-threshold", "0", "--out-dir", str(out)]
    for name in names:
        args += ["--system", f"{name}={paths[name, 1]},{paths[name, 2]}"]
    return args + list(extra)


def test_the_board_has_failures_drops_and_oracle_lengths(files, tmp_path, capsys):
    folder, paths, refs, systems = files
    # a seed's log-probabilities straight from fairseq-generate's output: the mean of each P- line
    generate = write(folder / "generate.out", [line for i in range(N) for line in (
        f"H-{i}\t-0.5\t{systems['good'][i]}", f"P-{i}\t-0.2500 -0.7500")])
    out = tmp_path / "board"
    scores = {name: f"{paths[name, 1, 'scores']},{paths[name, 2, 'scores']}" for name in systems}
    scores["good"] = f"{generate},{paths['good', 2, 'scores']}"
    args = board_args(paths, systems, out, "--oracle-decoding", "cut-oracle=cut", "--baseline", "cut",
                      *[a for name in systems for a in ("--system-scores", f"{name}={scores[name]}")])
    assert leaderboard.main(args) == 0
    table = capsys.readouterr().out
    assert "| – | cut-oracle — oracle-length decoding of cut |" in table
    for title in ("## Failures per length bucket", "## Drop beyond the training limit (12 tokens)",
                  "## Free and oracle-length decoding"):
        assert title in table
    board = json.loads((out / "board.json").read_text())
    assert board["signatures"]["loop"].startswith("share:neither, an n-gram")
    records = {(r["system"], r["set"]): r for r in board["records"]}
    assert records["cut-oracle", "G13:20"]["rank"] is None and records["cut-oracle", "G13:20"]["oracle_of"] == "cut"
    assert records["cut", "G21:∞"]["short"] == 100.0 and records["cut", "G21:∞"]["short_seeds"] == [100.0, 100.0]
    assert records["good", "G0:12"]["logprob_seeds"][0] == pytest.approx(-0.5)
    assert records["cut", "G21:∞"]["bleu_drop"] < -50 and records["cut", "G21:∞"]["bleu_drop_ci_hi"] < -50
    assert records["cut", "beyond"]["bleu_drop"] is None  # the drop is per bucket
    assert records["cut-oracle", "G21:∞"]["bleu_oracle_gain_p"] < 0.05
    assert {path.name for path in out.iterdir()} >= {"failures.png", "oracle.png"}
    assert "\\begin{table}" in (out / "board.tex").read_text()


def test_an_oracle_length_decoding_is_tuned_and_trained_with_its_free_system(files, tmp_path, capsys):
    """The learning-rate selection and the training logs name the free systems only; the
    oracle-length row shows its free system's rate and training."""
    folder, paths, _, _ = files
    point = {"dev_loss": 2.0, "updates": 100, "failure": None}
    tuning = folder / "tuning.json"
    tuning.write_text(json.dumps({"metric": "dev loss", "schemes": {
        name: {"grid": {"1e-3": point}, "chosen": "1e-3"} for name in ("good", "cut")}}))
    log = write(folder / "cut.log", ["| train | epoch 001 | ups 2.0 | num_updates 100"])
    common = ["--oracle-decoding", "cut-oracle=cut", "--tuning", str(tuning)]
    args = board_args(paths, ("good", "cut", "cut-oracle"), tmp_path / "board", *common,
                      "--train-log", f"cut={log},{log}")
    assert leaderboard.main(args) == 0
    records = {(r["system"], r["set"]): r for r in json.loads((tmp_path / "board" / "board.json").read_text())["records"]}
    assert records["cut-oracle", "beyond"]["updates"] == records["cut", "beyond"]["updates"] == 100
    assert "| cut-oracle |" not in capsys.readouterr().out.split("## Learning rate chosen")[1].split("##")[0]
    args = board_args(paths, ("good", "cut", "cut-oracle"), tmp_path / "refused", *common,
                      "--train-log", f"cut-oracle={log},{log}")
    assert leaderboard.main(args) == 2
    assert "--train-log cut-oracle: an oracle-length decoding's training is its free system's" in capsys.readouterr().err


def test_the_board_by_each_translations_length(files, tmp_path, capsys):
    _, paths, _, systems = files
    out = tmp_path / "board"
    args = board_args(paths, ("good", "cut"), out, "--length-by", "hypothesis",
                      *[a for name in ("good", "cut") for a in ("--system-lengths", f"{name}={paths[name, 1]},"
                                                                                     f"{paths[name, 2]}")])
    assert leaderboard.main(args) == 0
    assert "Buckets by each translation's own length" in capsys.readouterr().out
    records = {(r["system"], r["set"]): r for r in json.loads((out / "board.json").read_text())["records"]}
    cut_lengths = [len(hyp.split()) for hyp in systems["cut"]]
    assert records["cut", "G0:12"]["n_seeds"] == [sum(n <= LIMIT for n in cut_lengths)] * 2
    assert records["cut", "G0:12"]["bleu_p"] is None  # different sentences: no paired test


@pytest.mark.parametrize("extra, message", [
    (["--oracle-decoding", "cut-oracle=cut", "--system", "cut-oracle={good}"],
     "--oracle-decoding cut-oracle=cut: 1 files for 2 seeds"),
    (["--system-scores", "good={good}", "--system-scores", "cut={good},{good}"],
     "--system-scores good: 1 files for the 2 seeds of --system good"),
    (["--length-by", "hypothesis", "--system-lengths", "good={good},{good}"],
     "--system-lengths gives no file for cut: every system or none"),
    (["--length-by", "hypothesis", "--system-lengths", "good={good},{cut}", "--system-lengths", "cut={cut},{cut}"],
     "--system-lengths good {cut}: 73 of 120 lines are not the segmented form of the translations in "),
])
def test_the_board_refuses_bad_options(files, tmp_path, capsys, extra, message):
    _, paths, _, _ = files
    out = tmp_path / "board"
    fill = {"good": paths["good", 1], "cut": paths["cut", 1]}
    assert leaderboard.main(board_args(paths, ("good", "cut"), out, *[a.format(**fill) for a in extra])) == 2
    assert capsys.readouterr().err.startswith("error: " + message.format(**fill))
    assert not out.exists()


def test_segment_scores_near_the_float_limit_are_refused_not_averaged_to_inf(files, tmp_path, capsys):
    """Before, 1.5e308 passed the finite check and the board's bucket mean was inf."""
    folder, paths, _, _ = files
    huge = write(folder / "huge.comet", ["1.5e308"] * N)
    out = tmp_path / "board"
    args = board_args(paths, ("good",), out, "--segment-scores", f"COMET:good={huge},{huge}")
    assert leaderboard.main(args) == 2
    assert capsys.readouterr().err.startswith(
        f"error: --segment-scores COMET:good: line 1 of {huge} is '1.5e308', not a finite number of at most 1e+100")
    assert not out.exists()


def test_the_records_load_as_long_dataframes(files, tmp_path, capsys):
    _, paths, _, systems = files
    report_out, board_out = tmp_path / "report", tmp_path / "board"
    assert report.main(report_args(paths) + ["--train-limit", str(LIMIT), "--oracle-decoding", "cut-oracle=cut",
                                             "--failed", "huang3=diverged", "--out-dir", str(report_out)]) == 0
    assert leaderboard.main(board_args(paths, systems, board_out, "--oracle-decoding", "cut-oracle=cut")) == 0
    capsys.readouterr()

    frame = load_report(report_out)
    records = [r for r in json.loads((report_out / "report.json").read_text()) if r["failure"] is None]
    metrics = ["bleu", "ter", "empty", "short", "loop", "length_ratio"]
    assert len(frame) == len(records) * len(metrics)
    assert sorted(frame["metric"].unique()) == sorted(metrics)
    assert {"system", "oracle_of", "set", "bucket_lo", "bucket_hi", "n", "value", "ci_lo", "ci_hi", "p_value",
            "drop", "drop_ci_lo", "drop_ci_hi", "oracle_gain", "oracle_gain_p"} <= set(frame.columns)
    assert_rows_are_the_records(frame, {(r["system"], r["bucket"]): r for r in records})
    assert frame.query("system == 'cut' and set == 'G21:∞' and metric == 'bleu'")["drop"].iloc[0] < -50
    assert frame.attrs["failed"] == {"huang3": "diverged"}
    assert str(frame["bucket_hi"].dtype) == "Int64"

    board = load_board(board_out / "board.json")
    board_records = json.loads((board_out / "board.json").read_text())["records"]
    assert len(board) == len(board_records) * len(metrics)
    assert_rows_are_the_records(board, {(r["system"], r["set"]): r for r in board_records})
    assert board.query("system == 'cut-oracle' and set == 'G21:∞' and metric == 'bleu'")["oracle_gain"].iloc[0] > 50
    assert set(board["set"]) >= {"within", "beyond", "G0:12"}
    assert board.attrs["baseline"] == "good"
    with pytest.raises(InputError, match="not a board"):
        load_board(report_out / "report.json")
    assert_damage_is_named(report_out / "report.json", board_out / "board.json", tmp_path)


def assert_damage_is_named(report_json, board_json, tmp_path):
    """A damaged record (a key missing, a string where a number belongs) is refused on load,
    naming the file, the record and the key: before, a record without a key dropped a whole
    metric from the frame, and a string surfaced later in pandas."""
    def damaged(source, change):
        data = json.loads(source.read_text())
        change(data if isinstance(data, list) else data["records"], data)
        path = tmp_path / "damaged" / source.name
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data))
        return path

    def drop(key, index):
        return lambda records, _: records[index].pop(key)

    def text(key, index):
        return lambda records, _: records[index].update({key: str(records[index][key])})

    for load, source, set_key in ((load_report, report_json, "bucket"), (load_board, board_json, "set")):
        first = json.loads(source.read_text())
        first = (first if isinstance(first, list) else first["records"])[0]
        where = rf"{tmp_path / 'damaged' / source.name}: record 1 \('good', '{first[set_key]}'\)"
        for change, message in ((drop("ter", 0), f"{where} has no key 'ter'"),
                                (drop("n", 0), f"{where} has no key 'n'"),
                                (text("bleu", 0), f"{where}: 'bleu' is '[0-9.]+', not a number")):
            with pytest.raises(InputError, match=message):
                load(damaged(source, change))
    # every record's signature of TER gone (a board's): its rows would go without a word
    no_signature = damaged(report_json, lambda records, _: [r.pop("ter_signature", None) for r in records])
    with pytest.raises(InputError, match="its records score 'ter' but none has its 'ter_signature'"):
        load_report(no_signature)
    no_signature = damaged(board_json, lambda _, board: board["signatures"].pop("ter"))
    with pytest.raises(InputError, match="its 'signatures' have no 'ter', which its records score"):
        load_board(no_signature)


def assert_rows_are_the_records(frame, records):
    """Every quantity of every row is its record's field (``records``: (system, set) -> record)."""
    for row in frame.to_dict("records"):
        record = records[row["system"], row["set"]]
        assert row["n"] == record["n"] and row["bucket_lo"] == record["bucket_lo"]
        for suffix, column in QUANTITIES.items():
            if column in row:
                expected = record.get(row["metric"] + suffix)
                assert (pd.isna(row[column]) if expected is None else row[column] == expected), (row, column)
