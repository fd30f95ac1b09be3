"""Exact match (SCAN's measure) per bucket with intervals and paired tests, buckets by the
reference's length, and --reference-baseline: a second reference scored as a system, whose
change with length is the metric's own length bias."""
import dataclasses
import json
import random

import pytest
from sacrebleu.metrics import BLEU

from relpos_analysis import load_report
from relpos_analysis.buckets import buckets_from_edges
from relpos_analysis.report_model import LENGTH_BIAS_THRESHOLD, ScoringOptions, evaluate_by_length, length_bias
from relpos_analysis.metrics import exact_matches, parse_metrics
from relpos_analysis.report_render import markdown_table, records
from relpos_analysis.report import REFERENCE_ROW, main
from relpos_recipes.tools import scan
from conftest import SHARED

WMT21_DE_EN = SHARED / "data" / "wmt21-systems" / "de-en"


def test_exact_match_is_the_whole_output_in_whitespace_tokens_against_any_reference():
    hyps = ["I_WALK  I_RUN", "I_WALK", "i_walk", "I_JUMP", ""]
    refs = [["I_WALK I_RUN", "I_WALK I_WALK", "I_WALK", "I_LOOK", "I_RUN"],
            ["x", "y", "z", "I_JUMP", "w"]]
    assert exact_matches(hyps, refs) == [100.0, 0.0, 0.0, 100.0, 0.0]
    assert exact_matches(hyps, refs, lowercase=True)[2] == 100.0


def test_exact_is_asked_for_by_name_and_not_computed_by_default():
    assert parse_metrics("exact") == ["exact"]
    assert parse_metrics("bleu,exact") == ["bleu", "exact"]
    assert "exact" not in ScoringOptions().metrics
    assert [c.name for c in ScoringOptions(metrics=("exact", "bleu")).metric_configs()] == ["bleu"]


def scan_outputs(seed=0):
    """SCAN's length-split test pairs (a sample) and two systems: one right on short outputs
    only, one right on three in four."""
    pairs = scan.length_split(scan.all_pairs())["test"]
    pairs = random.Random(seed).sample(pairs, 400)
    references = [" ".join(actions) for _, actions in pairs]
    draw = random.Random(seed + 1).random
    short_only = [ref if len(ref.split()) <= 30 else ref.rsplit(" ", 1)[0] for ref in references]
    mostly = [ref if draw() < 0.75 else "I_WALK" for ref in references]
    return references, {"short_only": short_only, "mostly": mostly}


def test_exact_match_per_reference_length_bucket_with_intervals_and_paired_tests():
    references, systems = scan_outputs()
    lengths = [len(ref.split()) for ref in references]
    buckets = buckets_from_edges([30, 36])
    options = ScoringOptions(metrics=("exact",), n_bootstrap=200, workers=1)
    report = evaluate_by_length(lengths, [references], systems, buckets, options, baseline="short_only")
    first, middle, last = (report.cell("short_only", b).results["exact"] for b in buckets)
    assert first.score == 100.0 and middle.score == last.score == 0.0
    mostly = [report.cell("mostly", b).results["exact"] for b in buckets]
    for result, bucket in zip(mostly, buckets):
        members = [k for k, n in enumerate(lengths) if bucket.contains(n)]
        expected = 100 * sum(systems["mostly"][k] == references[k] for k in members) / len(members)
        assert result.score == pytest.approx(expected)
        assert result.ci_lo <= result.score <= result.ci_hi
    assert mostly[0].p_value < 0.05 and mostly[2].p_value < 0.05  # worse, then better than the baseline
    assert report.signatures["exact"].startswith("share:translation equal to a reference")
    table = markdown_table(report)
    assert "G31:36 exact %" in table and "| short_only (baseline) | 100.0 |" in table
    assert all("exact" in r for r in records(report))


@pytest.fixture
def two_references(tmp_path):
    """WMT21 De->En's first 200 sentences: source, references A and B, two systems."""
    if not WMT21_DE_EN.is_dir():
        pytest.skip(f"shared WMT21 data not found at {WMT21_DE_EN}")
    files = {}
    for name in ("src.de", "ref.A.en", "ref.B.en", "hyp.Facebook-AI.en", "hyp.Online-W.en"):
        lines = (WMT21_DE_EN / f"newstest2021.de-en.{name}").read_text(encoding="utf-8").split("\n")[:200]
        files[name] = tmp_path / name
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return files


def report_args(files, *extra):
    return ["--source", str(files["src.de"]), "--ref", str(files["ref.A.en"]), "--ref", str(files["ref.B.en"]),
            "--system", f"Facebook-AI={files['hyp.Facebook-AI.en']}",
            "--system", f"Online-W={files['hyp.Online-W.en']}", "--no-cache", "--workers", "1", *extra]


def test_the_reference_baseline_is_the_second_reference_scored_against_the_first(two_references, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(report_args(two_references, "--reference-baseline", "--length-by", "reference",
                            "--edges", "15,30", "--bootstrap", "50", "--json", str(out))) == 0
    table = capsys.readouterr().out
    assert f"| {REFERENCE_ROW} |" in table
    assert f"{REFERENCE_ROW}: the second reference, scored as a system against the other reference(s)" in table
    assert "nrefs:1|" in table  # every row is scored against reference A alone
    rows = json.loads(out.read_text())
    assert {r["system"] for r in rows if r["reference_row"]} == {REFERENCE_ROW}
    whole = next(r for r in rows if r["system"] == REFERENCE_ROW and r["bucket_lo"] is None)
    assert set(whole) >= {"bleu_length_bias", "ter_length_bias", "chrf_length_bias"}
    # reference B against reference A, as sacrebleu scores it
    ref_a = two_references["ref.A.en"].read_text(encoding="utf-8").splitlines()
    ref_b = two_references["ref.B.en"].read_text(encoding="utf-8").splitlines()
    assert whole["bleu"] == pytest.approx(BLEU().corpus_score(ref_b, [ref_a]).score)
    frame = load_report(out)
    bias = frame.query("system == @REFERENCE_ROW and set == 'all' and metric == 'bleu'")["length_bias"]
    assert list(bias) == [pytest.approx(whole["bleu_length_bias"])]
    assert set(frame.query("system == @REFERENCE_ROW and set != 'all'")["length_bias"].isna()) == {True}


def test_a_metric_whose_human_translation_worsens_with_length_is_flagged():
    # a "human translation" right on short sentences and ever less right on longer ones
    references, systems = scan_outputs()
    lengths = [len(ref.split()) for ref in references]
    human = [ref if n <= 30 else " ".join(ref.split()[: n // 2]) for ref, n in zip(references, lengths)]
    report = evaluate_by_length(lengths, [references], {"mostly": systems["mostly"], "human": human},
                                buckets_from_edges([30, 36]), ScoringOptions(metrics=("bleu", "exact"), n_bootstrap=0,
                                                                             workers=1))
    report = dataclasses.replace(report, reference_row="human")
    biases = {bias.metric: bias for bias in length_bias(report, "human")}
    assert biases["exact"].first_score == 100.0 and biases["exact"].last_score == 0.0
    assert biases["exact"].worsening == 1.0 and biases["exact"].flagged
    assert biases["bleu"].worsening > LENGTH_BIAS_THRESHOLD
    note = markdown_table(report)
    assert "Length bias of the metric" in note and "exact % from 100.0 (G0:30) to 0.0 (G37:∞), 100% worse" in note


@pytest.mark.parametrize("extra, message", [
    (["--reference-baseline"], "--reference-baseline scores the second --ref against the first: give two or more"),
    (["--reference-baseline", "--ref", "{ref}", "--system", f"{REFERENCE_ROW}={{ref}}"],
     f"--system {REFERENCE_ROW}: the name of --reference-baseline's row"),
    (["--reference-baseline", "--ref", "{ref}", "--system-scores", "a={ref}"],
     "--reference-baseline: a reference has no --system-scores"),
])
def test_what_the_reference_baseline_cannot_go_with_is_refused_before_any_work(tmp_path, capsys, extra, message):
    ref = tmp_path / "ref.txt"
    ref.write_text("a b\n")
    args = ["--source", str(ref), "--ref", str(ref), "--system", f"a={ref}", "--no-cache"]
    assert main(args + [part.format(ref=ref) for part in extra]) == 2
    assert message in capsys.readouterr().err

