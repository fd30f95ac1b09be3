"""--segment-scores: a metric computed elsewhere (COMET, MetricX, ...), one score per
sentence, scored per bucket as a mean with the same intervals and paired tests as BLEU, in
the report and the leaderboard, in every output format."""
import csv
import json
import random

import numpy as np
import pytest
from sacrebleu.significance import _compute_p_value

from relpos_analysis import bootstrap, leaderboard
from relpos_analysis.buckets import buckets_from_edges
from relpos_analysis.report_model import ScoringOptions, evaluate_by_length
from relpos_analysis.report import main as report_main

N = 90


@pytest.fixture(scope="module")
def case():
    """Sentences of 3-30 words; system "good" copies the reference, "bad" drops words;
    their segment scores are noisy and "good"'s are higher."""
    rng = random.Random(5)
    words = [f"w{i}" for i in range(50)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 30))) for _ in range(N)]
    systems = {"good": refs, "bad": [" ".join(ref.split()[::2]) for ref in refs]}
    scores = {"good": [round(rng.uniform(0.7, 0.95), 4) for _ in refs],
              "bad": [round(rng.uniform(0.5, 0.85), 4) for _ in refs]}
    return refs, systems, scores


def test_a_bucket_score_is_the_mean_with_the_paired_test_of_bleu(case):
    refs, systems, scores = case
    lengths = [len(ref.split()) for ref in refs]
    n_samples, seed = 200, 7
    report = evaluate_by_length(lengths, [refs], systems, buckets_from_edges([12]),
                                ScoringOptions(metrics=("bleu",), n_bootstrap=n_samples, seed=seed, workers=1),
                                baseline="good", segment_scores={"COMET": scores})
    assert report.metrics == ["bleu", "COMET"]
    short, long = report.buckets
    for bucket, indices in ((short, [i for i, n in enumerate(lengths) if n <= 12]),
                            (long, [i for i, n in enumerate(lengths) if n > 12]), (None, range(N))):
        for name in systems:
            result = report.cell(name, bucket).results["COMET"]
            assert result.score == pytest.approx(np.mean([scores[name][i] for i in indices]), abs=1e-12)
            assert result.ci_lo <= result.score <= result.ci_hi
    # the whole set's p-value, computed directly from sacrebleu's draws
    draws = bootstrap.resample_indices(N, n_samples, seed)
    good, bad = (np.asarray(scores[name])[draws].mean(axis=1) for name in ("good", "bad"))
    differences = np.abs(bad - good)
    observed = abs(np.mean(scores["bad"]) - np.mean(scores["good"]))
    expected = _compute_p_value(differences - differences.mean(), observed)
    assert report.cell("bad", None).results["COMET"].p_value == pytest.approx(expected, abs=2 / (n_samples + 1))
    assert report.cell("good", None).results["COMET"].p_value is None
    assert "bs:200|seed:7" in report.signatures["COMET"]


def write(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(case, tmp_path):
    refs, systems, scores = case
    paths = {"src": write(tmp_path / "src", refs), "ref": write(tmp_path / "ref", refs)}
    for name in systems:
        paths[name] = write(tmp_path / f"{name}.hyp", systems[name])
        paths[f"{name}.comet"] = write(tmp_path / f"{name}.comet", scores[name])
    return paths


def report_args(files, out):
    return ["--source", files["src"], "--ref", files["ref"], "--system", f"good={files['good']}",
            "--system", f"bad={files['bad']}", "--metrics", "bleu", "--bootstrap", "100",
            "--edges", "12", "--tokenize", "none", "--no-cache", "--out-dir", str(out),
            "--segment-scores", f"COMET:good={files['good.comet']}",
            "--segment-scores", f"COMET:bad={files['bad.comet']}"]


def test_the_report_shows_segment_scores_in_every_format(case, files, tmp_path, capsys):
    out = tmp_path / "report"
    assert report_main(report_args(files, out)) == 0
    table = capsys.readouterr().out
    header = table.splitlines()[0]
    assert header == "| system | G0:12 BLEU | G0:12 COMET | G13:∞ BLEU | G13:∞ COMET | all BLEU | all COMET |"
    bad_row = next(line for line in table.splitlines() if line.startswith("| bad |"))
    assert bad_row.split(" | ")[-1].rstrip(" |").endswith("\\*")  # significantly below good
    assert "COMET: the mean of the segment scores" in table
    records = json.loads((out / "report.json").read_text())
    whole = {r["system"]: r for r in records if r["bucket"] == "all"}
    assert whole["bad"]["COMET"] == pytest.approx(np.mean(case[2]["bad"]))
    assert whole["bad"]["COMET_p"] < 0.05 and whole["good"]["COMET_p"] is None
    assert whole["bad"]["COMET_ci_lo"] < whole["bad"]["COMET"] < whole["bad"]["COMET_ci_hi"]
    assert whole["bad"]["COMET_signature"].startswith("mean:segment scores|bs:100")
    with open(out / "report.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[-1]["COMET"]) == whole["bad"]["COMET"]
    latex = (out / "report.tex").read_text()
    assert "& BLEU & COMET &" in latex and f"{whole['bad']['COMET']:.3f}$^*$" in latex
    assert (out / "buckets.png").stat().st_size > 0


BAD_SCORES = [
    ("short", "line counts differ: {src} has 90 lines, {scores} has 89"),
    ("word", "--segment-scores COMET:bad: line 3 of {scores} is not a number: 'high'"),
    ("nan", "--segment-scores COMET:bad: line 3 of {scores} is 'nan', not a finite number"),
    ("one system", "--segment-scores COMET: no scores for bad; every system needs them"),
    ("unknown system", "--segment-scores COMET:ugly: 'ugly' is no --system"),
    ("taken name", "--segment-scores BLEU:bad: the name 'BLEU' is taken"),
    ("no name", "--segment-scores expects NAME:SYSTEM=FILE, got 'bad="),
    ("folder", "--segment-scores COMET:bad: {folder} is a folder; expected a file"),
]


@pytest.mark.parametrize("change, message", BAD_SCORES, ids=[change for change, _ in BAD_SCORES])
def test_bad_segment_scores_are_refused_by_name(files, tmp_path, capsys, change, message):
    out = tmp_path / "report"
    args = report_args(files, out)
    lines = open(files["bad.comet"]).read().splitlines()
    spec = args.index(f"COMET:bad={files['bad.comet']}")
    if change == "short":
        write(tmp_path / "bad.comet", lines[:-1])
    elif change in ("word", "nan"):
        write(tmp_path / "bad.comet", lines[:2] + ["high" if change == "word" else "nan"] + lines[3:])
    elif change == "one system":
        del args[spec - 1:spec + 1]
    elif change == "unknown system":
        args += ["--segment-scores", f"COMET:ugly={files['bad.comet']}"]
    elif change == "taken name":
        args[spec] = f"BLEU:bad={files['bad.comet']}"
    elif change == "no name":
        args[spec] = f"bad={files['bad.comet']}"
    elif change == "folder":
        args[spec] = f"COMET:bad={tmp_path}"
    assert report_main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + message.format(src=files["src"], scores=files["bad.comet"], folder=tmp_path)), err
    assert not out.exists()


def test_the_leaderboard_takes_a_file_per_seed(case, tmp_path, capsys):
    refs, systems, scores = case
    args = ["--source", write(tmp_path / "src", refs), "--ref", write(tmp_path / "ref", refs),
            "--train-limit", "12", "--edges", "12,20", "--tokenize", "none", "--bootstrap", "100",
            "--baseline", "good", "--out-dir", str(tmp_path / "board")]
    seed_scores = {name: [[s - 0.01 * k for s in scores[name]] for k in range(2)] for name in systems}
    for name in systems:
        hyps = ",".join(write(tmp_path / f"{name}.{k}", systems[name]) for k in range(2))
        comet = [write(tmp_path / f"{name}.{k}.comet", seed_scores[name][k]) for k in range(2)]
        args += ["--system", f"{name}={hyps}", "--segment-scores", f"COMET:{name}={','.join(comet)}"]
    assert leaderboard.main(args) == 0
    table = capsys.readouterr().out
    assert "| COMET G0:12 | COMET G13:20 | COMET G21:∞ |" in table
    data = json.loads((tmp_path / "board" / "board.json").read_text())
    bad_short = next(r for r in data["records"] if r["system"] == "bad" and r["set"] == "G0:12")
    short = [i for i, ref in enumerate(refs) if len(ref.split()) <= 12]
    expected = [np.mean([seed_scores["bad"][k][i] for i in short]) for k in range(2)]
    assert bad_short["COMET_seeds"] == pytest.approx(expected)
    assert bad_short["COMET_sd"] == pytest.approx(np.std(expected, ddof=1))
    assert bad_short["COMET_p"] < 0.05
    assert "COMET" in (tmp_path / "board" / "board.tex").read_text()
    with open(tmp_path / "board" / "board.csv", newline="") as f:
        assert "COMET_seeds" in next(csv.reader(f))

    args[args.index(f"COMET:bad={tmp_path}/bad.0.comet,{tmp_path}/bad.1.comet")] = f"COMET:bad={tmp_path}/bad.0.comet"
    assert leaderboard.main(args) == 2
    assert "--segment-scores COMET:bad: 1 files for the 2 seeds of --system bad" in capsys.readouterr().err
