"""The relpos-report command line (python -m relpos_analysis.report) on a slice of WMT21 De->En:
outputs, fairseq-generate input, and one-line errors with no files left behind."""
import csv
import json
import os
import random
import re
import shutil
import subprocess
import sys

import pytest
from sacrebleu.metrics import BLEU

from relpos_analysis import load_report, report
from relpos_analysis.report_model import check_resampling
from relpos_analysis.io import InputError
from relpos_analysis.report import main
from conftest import SHARED

WMT21_DE_EN = SHARED / "data" / "wmt21-systems" / "de-en"
WMT21_ZH = WMT21_DE_EN.parent / "zh-en" / "newstest2021.zh-en.src.zh"
N_LINES = 120
SYSTEMS = ("Online-W", "Facebook-AI", "happypoet")
REQUIRED_KEYS = {"system", "bucket_lo", "bucket_hi", "n", "length_ratio", "bleu", "ter", "chrf",
                 "bleu_ci_lo", "bleu_ci_hi", "bleu_p", "ter_ci_lo", "ter_ci_hi", "ter_p",
                 "chrf_ci_lo", "chrf_ci_hi", "chrf_p"}
OUT_DIR_FILES = {"report.md", "report.json", "report.csv", "report.tex", "buckets.png", "buckets.pdf",
                 "failures.png", "failures.pdf", "oracle.png", "oracle.pdf", "lengths.png"}


@pytest.fixture(autouse=True)
def private_statistics_cache(tmp_path_factory, monkeypatch):
    """Reports cache sentence statistics under $RELPOS_CACHE_DIR: a fresh one per test."""
    folder = tmp_path_factory.mktemp("statistics-cache")
    monkeypatch.setenv("RELPOS_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The first N_LINES sentences as files: source, refs A and B, and systems; the last
    system also as fairseq-generate output in shuffled order."""
    if not WMT21_DE_EN.is_dir():
        pytest.skip(f"shared WMT21 data not found at {WMT21_DE_EN}")
    folder = tmp_path_factory.mktemp("wmt21")

    def head(name):
        lines = (WMT21_DE_EN / f"newstest2021.de-en.{name}").read_text(encoding="utf-8").split("\n")
        path = folder / name
        path.write_text("\n".join(lines[:N_LINES]) + "\n", encoding="utf-8")
        return path, lines[:N_LINES]

    files = {"src": head("src.de")[0], "refA": head("ref.A.en")[0], "refB": head("ref.B.en")[0]}
    for system in SYSTEMS:
        files[system], hyps = head(f"hyp.{system}.en")
    source = files["src"].read_text(encoding="utf-8").split("\n")
    reference = files["refA"].read_text(encoding="utf-8").split("\n")
    order = list(range(N_LINES))
    random.Random(0).shuffle(order)
    generate = [f"S-{i}\t{source[i]}\nT-{i}\t{reference[i]}\nH-{i}\t-0.5\t{hyps[i]}\nP-{i}\t-0.5" for i in order]
    files["generate"] = folder / "generate.out"
    files["generate"].write_text("\n".join(generate) + "\n", encoding="utf-8")
    # the same as generate.out would print it without --remove-bpe: H- lines still in BPE
    with_bpe = [f"H-{i}\t-0.5\t{split_into_subwords(hyps[i])}" for i in order]
    files["generate-bpe"] = folder / "generate-bpe.out"
    files["generate-bpe"].write_text("\n".join(with_bpe) + "\n", encoding="utf-8")
    # ... and with --bpe subword_nmt, which adds D- lines with the BPE undone
    decoded = [f"{line}\nD-{i}\t-0.5\t{hyps[i]}" for line, i in zip(with_bpe, order)]
    files["generate-decoded"] = folder / "generate-decoded.out"
    files["generate-decoded"].write_text("\n".join(decoded) + "\n", encoding="utf-8")
    files["bpe"] = folder / "hyp.bpe.en"
    files["bpe"].write_text("".join(split_into_subwords(hyp) + "\n" for hyp in hyps), encoding="utf-8")
    files["silent"] = folder / "silent.en"
    files["silent"].write_text("\n" * N_LINES, encoding="utf-8")
    if WMT21_ZH.is_file():  # Chinese, unsegmented
        files["zh"] = folder / "src.zh"
        files["zh"].write_text("\n".join(WMT21_ZH.read_text(encoding="utf-8").split("\n")[:N_LINES]) + "\n",
                               encoding="utf-8")
    return files


def split_into_subwords(line):
    """Words of more than six characters split as subword-nmt's BPE would: 'trans@@ lation'."""
    return " ".join(word[:3] + "@@ " + word[3:] if len(word) > 6 else word for word in line.split())


def zh_file(files):
    if "zh" not in files:
        pytest.skip(f"shared WMT21 Zh-En data not found at {WMT21_ZH}")
    return files["zh"]


def base_args(files, systems=SYSTEMS):
    args = ["--source", str(files["src"]), "--ref", str(files["refA"]), "--ref", str(files["refB"])]
    for system in systems:
        args += ["--system", f"{system}={files[system]}"]
    return args


def test_out_dir_writes_every_output(data, tmp_path, capsys):
    out = tmp_path / "report"
    status = main(base_args(data) + ["--edges", "10,20,30", "--bootstrap", "100", "--train-limit", "30",
                                     "--title", "WMT21 De-En", "--out-dir", str(out)])
    stdout = capsys.readouterr().out
    assert status == 0
    assert {p.name for p in out.iterdir()} == OUT_DIR_FILES

    assert (out / "report.md").read_text(encoding="utf-8") == stdout
    scores_part = stdout.split("## Failures per length bucket")[0]  # the first table
    table = [line for line in scores_part.splitlines() if line.startswith("|")]
    assert table[0].startswith("| system | G0:10 BLEU | G0:10 TER | G0:10 chrF | G11:20 BLEU")
    assert "| G31:∞ BLEU |" in table[0] and table[0].endswith("| all BLEU | all TER | all chrF |")
    assert table[2].startswith("| *sentences* |")
    assert [row.split(" | ")[0] for row in table[3:]] == ["| Online-W (baseline)", "| Facebook-AI", "| happypoet"]
    assert "nrefs:2|bs:100|seed:12345|case:mixed|eff:no|tok:13a" in stdout

    records = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert len(records) == len(SYSTEMS) * 5
    assert all(REQUIRED_KEYS <= set(record) for record in records)
    for system in SYSTEMS:
        mine = [r for r in records if r["system"] == system]
        assert [(r["bucket_lo"], r["bucket_hi"]) for r in mine] == [
            (0, 10), (11, 20), (21, 30), (31, None), (None, None)]
        assert sum(r["n"] for r in mine[:-1]) == mine[-1]["n"] == N_LINES
        assert all(r["bleu_ci_lo"] <= r["bleu"] <= r["bleu_ci_hi"] for r in mine)
        assert all((r["ter_p"] is None) == (system == "Online-W") for r in mine)
    sizes = table[2].split(" | ")[1::3]  # "2†": fewer than 30 sentences, so no significance marks
    assert [int(size.rstrip("†")) for size in sizes] == [r["n"] for r in records if r["system"] == "Online-W"]
    assert sizes[3].endswith("†") and "† fewer than 30 sentences" in stdout
    assert not any("\\*" in row.split(" | ")[10:13] for row in table[3:])

    with open(out / "report.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(row["system"], row["bucket"]) for row in rows] == [(r["system"], r["bucket"]) for r in records]
    assert float(rows[1]["bleu"]) == records[1]["bleu"]

    latex = (out / "report.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}" in latex and "\\multicolumn{3}{c}{31--$\\infty$}" in latex
    assert (out / "buckets.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "buckets.pdf").read_bytes().startswith(b"%PDF")
    assert (out / "lengths.png").read_bytes().startswith(b"\x89PNG")


def test_the_wmt21_report_loads_as_a_long_dataframe(data, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(base_args(data) + ["--edges", "10,20", "--bootstrap", "50", "--train-limit", "10",
                                   "--out-dir", str(out)]) == 0
    capsys.readouterr()
    records = json.loads((out / "report.json").read_text(encoding="utf-8"))
    frame = load_report(out / "report.json")
    metrics = ["bleu", "ter", "chrf", "empty", "short", "loop", "length_ratio"]
    assert len(frame) == len(records) * len(metrics) and set(frame["metric"]) == set(metrics)
    beyond = frame.query("system == 'happypoet' and set == 'G21:∞' and metric == 'chrf'").iloc[0]
    record = next(r for r in records if r["system"] == "happypoet" and r["bucket"] == "G21:∞")
    assert [beyond[q] for q in ("value", "ci_lo", "p_value", "drop", "drop_ci_hi")] == [
        record["chrf"], record["chrf_ci_lo"], record["chrf_p"], record["chrf_drop"], record["chrf_drop_ci_hi"]]


def test_individual_flags_override_the_out_dir(data, tmp_path, capsys):
    out, other = tmp_path / "report", tmp_path / "elsewhere"
    status = main(base_args(data, SYSTEMS[:2]) + [
        "--metrics", "bleu", "--bootstrap", "20", "--out-dir", str(out),
        "--json", str(other / "scores.json"), "--plot", str(other / "figure.png"),
        "--histogram", str(other / "hist.pdf"),
    ])
    assert status == 0
    assert {p.name for p in out.iterdir()} == {"report.md", "report.csv", "report.tex", "failures.png",
                                               "failures.pdf", "oracle.png", "oracle.pdf"}
    assert {p.name for p in other.iterdir()} == {"scores.json", "figure.png", "figure.pdf", "hist.pdf"}


def test_fairseq_generate_output_is_accepted_for_every_input(data, tmp_path, capsys):
    plain, generated = tmp_path / "plain.json", tmp_path / "generated.json"
    common = ["--metrics", "bleu,chrf", "--bootstrap", "50"]
    assert main(["--source", str(data["src"]), "--ref", str(data["refA"]),
                 "--system", f"Online-W={data['Online-W']}", "--system", f"happypoet={data['happypoet']}",
                 "--json", str(plain)] + common) == 0
    assert main(["--source", str(data["generate"]), "--ref", str(data["generate"]),
                 "--system", f"Online-W={data['Online-W']}", "--system", f"happypoet={data['generate']}",
                 "--json", str(generated)] + common) == 0
    assert json.loads(plain.read_text()) == json.loads(generated.read_text())


def test_same_seed_same_output_other_seed_other_intervals(data, tmp_path, capsys):
    def run(name, seed):
        path = tmp_path / name
        assert main(base_args(data, SYSTEMS[:2]) + ["--metrics", "bleu", "--bootstrap", "50",
                                                    "--seed", str(seed), "--json", str(path)]) == 0
        return path.read_bytes()

    assert run("a.json", 1) == run("b.json", 1)
    assert run("a.json", 1) != run("c.json", 2)


def test_quantile_buckets_and_reference_lengths(data, tmp_path, capsys):
    path = tmp_path / "q.json"
    assert main(base_args(data, SYSTEMS[:1]) + ["--metrics", "bleu", "--bootstrap", "0", "--quantiles", "3",
                                                "--by-reference-length", "--json", str(path)]) == 0
    sizes = [r["n"] for r in json.loads(path.read_text()) if r["bucket"] != "all"]
    assert len(sizes) == 3 and sum(sizes) == N_LINES and max(sizes) - min(sizes) <= 12


def test_length_file_gives_the_lengths(data, tmp_path, capsys):
    doubled = tmp_path / "doubled.de"  # every token twice: every length doubles
    doubled.write_text("".join(" ".join(w + " " + w for w in line.split()) + "\n"
                               for line in data["src"].read_text(encoding="utf-8").splitlines()))
    sizes = {}
    for name, extra in (("plain", []), ("doubled", ["--length-file", str(doubled)])):
        path = tmp_path / f"{name}.json"
        assert main(base_args(data, SYSTEMS[:1]) + ["--metrics", "bleu", "--bootstrap", "0",
                                                    "--edges", "9,19", "--json", str(path)] + extra) == 0
        sizes[name] = [r["n"] for r in json.loads(path.read_text())]
    lengths = [len(line.split()) for line in data["src"].read_text(encoding="utf-8").splitlines()]
    assert sizes["plain"][0] == sum(length <= 9 for length in lengths)
    assert sizes["doubled"][0] == sum(2 * length <= 9 for length in lengths)


def _bad_inputs(data, folder):
    short = folder / "short.en"
    short.write_text("\n".join(data["happypoet"].read_text(encoding="utf-8").splitlines()[:-1]) + "\n")
    empty = folder / "empty.en"
    empty.write_text("")
    latin1 = folder / "latin1.en"
    latin1.write_bytes(data["happypoet"].read_text(encoding="utf-8").replace("the", "thé").encode("latin-1"))
    return {
        "mismatched line counts": (
            ["--system", f"short={short}"], f"line counts differ: {data['src']} has {N_LINES} lines, "
                                            f"{short} has {N_LINES - 1}"),
        "missing file": (["--system", f"gone={folder / 'gone.en'}"], f"no such file: {folder / 'gone.en'}"),
        "empty file": (["--ref", str(empty)], f"empty file: {empty}"),
        "invalid UTF-8": (["--system", f"latin1={latin1}"], f"{latin1} is not valid UTF-8 (line "),
        "unknown baseline": (["--baseline", "nope"], "unknown baseline 'nope'; systems are Online-W, Facebook-AI"),
        "edges not increasing": (["--edges", "25,50,40"], "bucket edges must be strictly increasing: 25,50,40"),
        "bad system spec": (["--system", "no-equals-sign"], "--system expects NAME=FILE"),
        "unknown metric": (["--metrics", "bleu,meteor"], "--metrics takes a list from bleu,ter,chrf"),
        "negative seed": (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
        "hypotheses in BPE": (["--system", f"bpe={data['bpe']}"],
                              f"{data['bpe']}: 117 of {N_LINES} lines still carry BPE ('@@ ')"),
        "fairseq H- lines in BPE": (["--system", f"gen={data['generate-bpe']}"],
                                    f"{data['generate-bpe']}: 117 of {N_LINES} lines still carry BPE"),
        "unsegmented source": (["--source", str(zh_file(data))] if "zh" in data else [],
                               f"{data.get('zh')} looks like text written without spaces"),
        "cache folder is a file": (["--cache-dir", str(data["src"])],
                                   f"cannot write the statistics cache {data['src']}: "),
    }


def test_cache_progress_lines_and_no_cache(data, tmp_path, capsys, monkeypatch,
                                          private_statistics_cache):
    monkeypatch.setattr(report, "PROGRESS_MIN_PAIRS", 2 * N_LINES)  # lines for 2+ systems
    args = base_args(data) + ["--metrics", "bleu,ter", "--bootstrap", "20"]
    assert main(args) == 0
    first = capsys.readouterr()
    assert re.findall(r"\[relpos-report\] (\w+) statistics of 3 systems: (\d) computed", first.err) == [
        ("bleu", "3"), ("ter", "3")]
    assert "[relpos-report] outputs rendered" in first.err
    assert len(list(private_statistics_cache.iterdir())) == 6  # 2 metrics x 3 systems

    assert main(args) == 0
    again = capsys.readouterr()
    assert again.out == first.out
    assert "bleu statistics of 3 systems: 0 computed, 3 from the cache" in again.err

    elsewhere = tmp_path / "elsewhere"
    assert main(args + ["--no-cache"]) == 0 and main(args + ["--cache-dir", str(elsewhere)]) == 0
    assert capsys.readouterr().out == first.out * 2
    assert len(list(private_statistics_cache.iterdir())) == 6 and len(list(elsewhere.iterdir())) == 6

    assert main(base_args(data, SYSTEMS[:1]) + ["--bootstrap", "0"]) == 0
    assert "[relpos-report]" not in capsys.readouterr().err  # small reports stay quiet


BAD_INPUTS = ["mismatched line counts", "missing file", "empty file", "invalid UTF-8",
              "unknown baseline", "edges not increasing", "bad system spec", "unknown metric",
              "negative seed", "hypotheses in BPE", "fairseq H- lines in BPE", "unsegmented source",
              "cache folder is a file"]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_exit_2_and_no_files(data, tmp_path, capsys, case):
    if case == "unsegmented source":
        zh_file(data)
    extra, message = _bad_inputs(data, tmp_path)[case]
    out = tmp_path / "report"
    status = main(base_args(data, SYSTEMS[:2]) + [
        "--metrics", "bleu", "--bootstrap", "10", "--out-dir", str(out), "--json", str(tmp_path / "r.json")] + extra)
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    assert message in captured.err
    assert not out.exists() and not (tmp_path / "r.json").exists()


def test_failed_write_leaves_no_files(data, tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder is expected")
    status = main(base_args(data, SYSTEMS[:1]) + [
        "--metrics", "bleu", "--bootstrap", "0",
        "--csv", str(tmp_path / "ok.csv"), "--json", str(blocker / "r.json")])
    assert status == 2
    assert capsys.readouterr().err.startswith("error: cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-folder"]


def test_module_entry_point_exits_2_with_one_line(data):
    result = subprocess.run(
        [sys.executable, "-m", "relpos_analysis.report"] + base_args(data) + ["--edges", "50,25"],
        capture_output=True, text=True,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "error: bucket edges must be strictly increasing: 50,25\n"


def test_subword_markers_tell_the_fix_and_can_be_scored_anyway(data, tmp_path, capsys):
    # data["bpe"] and the fairseq-generate files hold the last system's translations
    args = base_args(data, SYSTEMS[-1:]) + ["--metrics", "bleu", "--bootstrap", "0"]
    decoded, segmented = tmp_path / "decoded.json", tmp_path / "segmented.json"
    assert main(args + ["--system", f"bpe={data['bpe']}"]) == 2
    assert "--remove-bpe" in capsys.readouterr().err
    # fairseq-generate output with D- lines: those are read, so the BPE in H- does not matter
    assert main(args + ["--system", f"gen={data['generate-decoded']}", "--json", str(decoded)]) == 0
    records = {r["system"]: r["bleu"] for r in json.loads(decoded.read_text()) if r["bucket"] == "all"}
    assert records["gen"] == records[SYSTEMS[-1]]
    assert main(args + ["--system", f"bpe={data['bpe']}", "--allow-subwords", "--json", str(segmented)]) == 0
    records = {r["system"]: r["bleu"] for r in json.loads(segmented.read_text()) if r["bucket"] == "all"}
    assert records["bpe"] < records[SYSTEMS[-1]] * 0.8


def test_unsegmented_source_is_measured_in_characters_when_asked(data, tmp_path, capsys):
    zh = zh_file(data)
    path = tmp_path / "chars.json"
    assert main(["--source", str(zh), "--ref", str(data["refA"]), "--system", f"a={data[SYSTEMS[0]]}",
                 "--metrics", "bleu", "--bootstrap", "0", "--length-unit", "char", "--edges", "20",
                 "--json", str(path)]) == 0
    lengths = [len(line.replace(" ", "")) for line in zh.read_text(encoding="utf-8").splitlines()]
    assert [r["n"] for r in json.loads(path.read_text())] == [
        sum(length <= 20 for length in lengths), sum(length > 20 for length in lengths), N_LINES]
    assert main(["--source", str(zh), "--ref", str(data["refA"]), "--system", f"a={data[SYSTEMS[0]]}",
                 "--length-unit", "char", "--length-file", str(data["src"])]) == 2
    assert "drop --length-file" in capsys.readouterr().err


def test_chinese_target_gets_sacrebleus_chinese_tokenizer(data, tmp_path, capsys):
    zh = zh_file(data)
    changed = tmp_path / "changed.zh"  # every ninth character replaced
    changed.write_text("".join("".join("的" if i % 9 == 4 else c for i, c in enumerate(line)) + "\n"
                               for line in zh.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    args = ["--source", str(data["src"]), "--ref", str(zh), "--system", f"changed={changed}",
            "--metrics", "bleu", "--bootstrap", "0"]
    assert main(args) == 2
    assert "pass --target-lang" in capsys.readouterr().err
    assert main(args + ["--target-lang", "zh", "--metrics", "bleu,ter"]) == 2  # TER splits at spaces
    assert "TER would take whole clauses for words" in capsys.readouterr().err
    path = tmp_path / "zh.json"
    assert main(args + ["--target-lang", "zh", "--json", str(path)]) == 0
    assert "|tok:zh|" in capsys.readouterr().out
    (record,) = [r for r in json.loads(path.read_text()) if r["bucket"] == "all"]
    hyps, refs = changed.read_text(encoding="utf-8").splitlines(), zh.read_text(encoding="utf-8").splitlines()
    assert record["bleu"] == BLEU(tokenize="zh").corpus_score(hyps, [refs]).score
    assert "|tok:zh|" in record["bleu_signature"]


def test_a_tokenizer_without_its_packages_is_refused_before_the_scoring(data, capsys):
    try:
        BLEU(trg_lang="ja")
        pytest.skip("sacrebleu's Japanese tokenizer is installed")
    except RuntimeError:
        pass
    assert main(base_args(data) + ["--system", f"gone={data['src']}.gone", "--target-lang", "ja"]) == 2
    assert capsys.readouterr().err.startswith(
        "error: BLEU's tokenizer for --target-lang ja is not available: Japanese tokenization requires")


def test_a_system_identical_to_the_baseline_is_marked_in_every_format(data, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(base_args(data, SYSTEMS[:1]) + ["--system", f"copy={data[SYSTEMS[0]]}", "--metrics", "bleu,ter",
                                                "--bootstrap", "100", "--edges", "none", "--out-dir", str(out)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| copy |"))
    cells = row.strip("| ").split(" | ")[1:]
    assert len(cells) == 4 and all(cell.endswith("=") and "*" not in cell for cell in cells)
    copies = [r for r in json.loads((out / "report.json").read_text()) if r["system"] == "copy"]
    assert all(r["identical_to_baseline"] and r["bleu_p"] == r["ter_p"] == 1.0 for r in copies)
    with open(out / "report.csv", encoding="utf-8", newline="") as f:
        assert {row["identical_to_baseline"] for row in csv.DictReader(f) if row["system"] == "copy"} == {"True"}
    assert "$^{=}$" in (out / "report.tex").read_text(encoding="utf-8")


def test_a_system_of_empty_lines_is_scored(data, tmp_path, capsys):
    path = tmp_path / "r.json"
    assert main(base_args(data, SYSTEMS[:1]) + ["--system", f"silent={data['silent']}", "--metrics", "bleu,ter",
                                                "--bootstrap", "20", "--json", str(path)]) == 0
    (record,) = [r for r in json.loads(path.read_text()) if r["system"] == "silent" and r["bucket"] == "all"]
    # TER: with two references, the edits to the closer one over their average length
    assert (record["bleu"], record["length_ratio"]) == (0.0, 0.0) and record["ter"] > 90


@pytest.fixture
def read_only_folder(tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    immutable = False
    if os.access(folder, os.W_OK):  # root: the mode does not stop it, the immutable flag does
        chattr = shutil.which("chattr")
        immutable = bool(chattr) and subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode == 0
        if not immutable:
            folder.chmod(0o755)
            pytest.skip("cannot make a folder read-only here")
    yield folder
    if immutable:
        subprocess.run([chattr, "-i", str(folder)], check=True)
    folder.chmod(0o755)


@pytest.mark.parametrize("where", ["read-only folder", "file as folder"])
def test_unwritable_output_fails_before_any_input_is_read(data, tmp_path, capsys, request, where):
    if where == "read-only folder":
        out = request.getfixturevalue("read_only_folder") / "report"
    else:
        (tmp_path / "a-file").write_text("")
        out = tmp_path / "a-file" / "report"
    # the missing system file would be the first error, were the outputs checked later
    status = main(base_args(data, SYSTEMS[:1]) + ["--system", f"gone={tmp_path / 'gone.en'}",
                                                  "--out-dir", str(out)])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    assert captured.err.startswith(f"error: cannot write {out / 'report.md'}: ")
    assert "not writable" in captured.err or "not a folder" in captured.err


@pytest.mark.parametrize("variant", ["trailing spaces", "CRLF line ends", "byte order mark"])
def test_a_system_scoring_like_the_baseline_is_never_significant(data, tmp_path, capsys, variant):
    """Text that differs from the baseline's only in what the metrics ignore has the same
    sentence statistics: a zero difference, p = 1, marked '=' and never '*'."""
    lines = data[SYSTEMS[0]].read_text(encoding="utf-8").splitlines()
    same = tmp_path / "same.en"
    if variant == "byte order mark":
        same.write_bytes("\ufeff".encode("utf-8") + "".join(f"{line}\n" for line in lines).encode("utf-8"))
    else:
        end = "   \n" if variant == "trailing spaces" else "\r\n"
        same.write_bytes("".join(line + end for line in lines).encode("utf-8"))
    out = tmp_path / "report"
    assert main(base_args(data, SYSTEMS[:1]) + ["--system", f"same={same}", "--bootstrap", "100",
                                                "--edges", "10", "--out-dir", str(out)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| same |"))
    cells = row.strip("| ").split(" | ")[1:]
    assert len(cells) == 9 and all(cell.endswith("=") for cell in cells), row
    records = [r for r in json.loads((out / "report.json").read_text()) if r["system"] == "same"]
    assert all(r["identical_to_baseline"] for r in records)
    assert all(r[f"{metric}_p"] == 1.0 for r in records for metric in ("bleu", "ter", "chrf"))


def test_too_many_resamples_are_refused_before_the_scoring(data, tmp_path, capsys):
    status = main(base_args(data) + ["--bootstrap", "100000000", "--json", str(tmp_path / "r.json")])
    assert status == 2 and not (tmp_path / "r.json").exists()
    assert capsys.readouterr().err.startswith("error: --bootstrap 100000000: at most 100000")
    # within the count, the draws (all at once, as sacrebleu's) must fit in memory
    with pytest.raises(InputError, match=r"--bootstrap 50000 on 28075 sentences would draw .* "
                                         r"\(10\.5 GiB: .*at most 9561 fit"):
        check_resampling(50000, 1, 12345, n_sentences=28075)


def test_the_files_are_written_before_the_table_meets_a_closed_stdout(data, tmp_path):
    """`relpos-report ... | head`: a reader that stops early costs no output file and no
    traceback."""
    out = tmp_path / "report"
    command = [sys.executable, "-m", "relpos_analysis.report"] + base_args(data, SYSTEMS[:2]) + [
        "--metrics", "bleu", "--bootstrap", "10", "--out-dir", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader has gone before the first line
    stderr = process.stderr.read().decode()
    assert process.wait() == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert {p.name for p in out.iterdir()} == OUT_DIR_FILES


@pytest.mark.parametrize("extra, message", [
    (["--json", "{tmp}/r", "--csv", "{tmp}/r"], "--json and --csv would both write {tmp}/r"),
    (["--out-dir", "{tmp}/o", "--latex", "{tmp}/o/report.md"],
     "--out-dir (report.md) and --latex would both write {tmp}/o/report.md"),
    (["--plot", "{tmp}/fig", "--histogram", "{tmp}/fig.pdf"], "--plot and --histogram would both write"),
    (["--json", "{src}"], "--json would overwrite {src}, the input given with --source"),
])
def test_outputs_on_one_path_or_on_an_input_are_refused(data, tmp_path, capsys, extra, message):
    before = data["src"].read_bytes()
    fill = {"tmp": tmp_path, "src": data["src"]}
    assert main(base_args(data, SYSTEMS[:1]) + [arg.format(**fill) for arg in extra]) == 2
    assert capsys.readouterr().err.startswith("error: " + message.format(**fill))
    assert list(tmp_path.iterdir()) == [] and data["src"].read_bytes() == before


def test_a_folder_given_as_a_file_names_its_option(data, tmp_path, capsys):
    assert main(base_args(data, SYSTEMS[:1]) + ["--system", f"dir={tmp_path}"]) == 2
    assert capsys.readouterr().err == f"error: --system dir: {tmp_path} is a folder; expected a file\n"
    assert main(base_args(data, SYSTEMS[:1]) + ["--length-file", str(tmp_path / "gone")]) == 2
    assert capsys.readouterr().err == f"error: --length-file: no such file: {tmp_path / 'gone'}\n"


def test_a_system_without_length_ratio_is_null_in_valid_json(tmp_path, capsys):
    """Empty references have no length to divide by: the ratio is null, not NaN (which
    is no JSON)."""
    source = tmp_path / "src"
    source.write_text("".join(f"word{i} " * (i % 7 + 1) + "\n" for i in range(40)))
    empty = tmp_path / "ref"
    empty.write_text("\n" * 40)
    path = tmp_path / "r.json"
    assert main(["--source", str(source), "--ref", str(empty), "--system", f"copy={source}",
                 "--metrics", "bleu", "--bootstrap", "0", "--json", str(path)]) == 0

    def no_constants(name):
        raise ValueError(f"{name} in JSON")

    records = json.loads(path.read_text(), parse_constant=no_constants)
    assert all(record["length_ratio"] is None for record in records if record["n"])


def test_the_latex_table_spells_its_symbols_in_latex(data, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(base_args(data) + ["--metrics", "bleu", "--bootstrap", "50", "--edges", "10,20,30",
                                   "--system", f"copy={data[SYSTEMS[0]]}", "--out-dir", str(out)]) == 0
    latex = (out / "report.tex").read_text(encoding="utf-8")
    assert latex.isascii(), [c for c in latex if not c.isascii()]
    assert "$^\\dagger$" in latex and "$^*$" in latex and "$^{=}$" in latex
