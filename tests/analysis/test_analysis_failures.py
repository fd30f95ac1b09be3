"""Why translations fail beyond the training lengths, in the library (relpos_analysis.failures,
relpos_analysis.report_model): the failure definitions on hand-made cases, their shares and the
mean log-probability per bucket, the drop beyond the limit, oracle-length gains, and buckets
by each system's own translation length."""
import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from relpos_analysis import bootstrap
from relpos_analysis.buckets import bucket_members, buckets_from_edges
from relpos_analysis.report_model import ScoringOptions, evaluate_by_length
from relpos_analysis.failures import classify, failure_flags, longest_repeat
from relpos_analysis.io import InputError
from relpos_analysis.report_render import json_text, latex_table, markdown_table, records

LIMIT = 12


@pytest.mark.parametrize("text, repeats", [
    ("", 0), ("a", 1), ("a b c d", 1),
    ("a a b", 2), ("a a a a", 4),
    ("a b a b a b c", 3), ("x a b c a b c a b c", 3),
    ("the cat sat the cat sat on", 2),
    ("a b c d a b c d a b c d", 3),  # a 4-gram three times
    ("a b c d e a b c d e a b c d e", 1),  # a 5-gram: longer than the n-grams counted
    ("a b a c a b", 1),  # repeated, but not in a row
])
def test_longest_repeat_counts_copies_in_a_row(text, repeats):
    assert longest_repeat(text.split()) == repeats


@pytest.mark.parametrize("hypothesis, reference, failure", [
    ("", "a b c", "empty"),
    ("", "", "empty"),
    ("a b", "a b c d e", "short"),  # 2 < 0.5 * 5
    ("a b c", "a b c d e f", ""),  # 3 is not below 0.5 * 6
    ("a b", "a b c d e f", "short"),
    ("the the the", "a b c d e f g h", "short"),  # stopped early first: short, not a loop
    ("a b a b a b", "a b c d e f", "loop"),
    ("ha ha ha ha", "he said ha ha ha ha", ""),  # the reference repeats as often
    ("ha ha ha ha ha", "he said ha ha ha", "loop"),  # more often than the reference
    ("ha ha", "ha", ""),  # twice is not a loop
    ("one two three four five", "one two three four five", ""),
])
def test_each_translation_has_at_most_one_failure(hypothesis, reference, failure):
    assert classify(hypothesis.split(), reference.split()) == failure


def test_the_short_ratio_is_an_option():
    assert classify("a b c".split(), "a b c d e f g h".split(), 0.3) == ""
    assert classify("a b".split(), "a b c d e f g h".split(), 0.3) == "short"
    flags = failure_flags([[], ["a"], ["a", "b", "a", "b", "a", "b"]], [["x"], ["a", "b", "c"], list("uvwxyz")])
    assert flags == {"empty": [100.0, 0.0, 0.0], "short": [0.0, 100.0, 0.0], "loop": [0.0, 0.0, 100.0]}


@pytest.fixture(scope="module")
def case():
    """References of 3-30 words; "good" copies them, "cut" stops after a third of those over
    the limit, "loops" repeats a bigram at the end of those over it; their log-probabilities."""
    rng = random.Random(3)
    words = [f"w{i}" for i in range(80)]
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 30))) for _ in range(120)]
    lengths = [len(ref.split()) for ref in refs]
    cut = [ref if n <= LIMIT else " ".join(ref.split()[:n // 3]) for ref, n in zip(refs, lengths)]
    loops = [ref if n <= LIMIT else " ".join(ref.split()[:-4] + ["la", "li"] * 3) for ref, n in zip(refs, lengths)]
    systems = {"good": refs, "cut": cut, "loops": loops}
    log_probs = {name: [round(-rng.uniform(0.1, 2.0), 4) for _ in refs] for name in systems}
    return lengths, refs, systems, log_probs


def test_failure_shares_and_log_probabilities_per_bucket(case):
    lengths, refs, systems, log_probs = case
    options = ScoringOptions(metrics=("bleu",), tokenize="none", n_bootstrap=200, seed=4, workers=1)
    report = evaluate_by_length(lengths, [refs], systems, buckets_from_edges([LIMIT]), options,
                                log_probs=log_probs)
    assert report.failure_metrics == ["empty", "short", "loop", "logprob"]
    assert report.metrics == ["bleu"]
    within, beyond = bucket_members(lengths, report.buckets)
    for name, hyps in systems.items():
        for bucket, indices in zip(report.buckets, (within, beyond)):
            results = report.cell(name, bucket).results
            kinds = [classify(hyps[i].split(), refs[i].split()) for i in indices]
            for failure in ("empty", "short", "loop"):
                assert results[failure].score == pytest.approx(100 * kinds.count(failure) / len(indices))
            assert results["logprob"].score == pytest.approx(np.mean([log_probs[name][i] for i in indices]))
            # the logprob's interval: the resampled means, drawn as every metric's are
            draws = bootstrap.resample_indices(len(indices), 200, 4)
            means = np.asarray(log_probs[name])[indices][draws].mean(axis=1)
            assert (results["logprob"].ci_lo, results["logprob"].ci_hi) == pytest.approx(
                bootstrap.confidence_interval(means))
    assert report.cell("cut", report.buckets[1]).results["short"].score == 100.0
    assert report.cell("cut", report.buckets[1]).results["short"].p_value < 0.05
    assert report.cell("loops", report.buckets[1]).results["loop"].score == 100.0
    assert report.cell("good", report.buckets[0]).results["loop"].score == 0.0
    assert "|tok:none|" in report.signatures["loop"] and "below 0.5 x" in report.signatures["short"]
    table = markdown_table(report)
    assert "## Failures per length bucket" in table and "| G13:∞ loop % |" in table
    assert "log2 p/token" in table and "Guerreiro et al. 2023" in table
    assert "\\multicolumn" in latex_table(report) and "loop \\%" in latex_table(report)
    assert {"empty", "short_ci_lo", "loop_p", "logprob_signature"} <= set(records(report)[0])


def test_the_drop_beyond_the_limit_resamples_each_set_on_its_own(case):
    lengths, refs, systems, _ = case
    options = ScoringOptions(metrics=("bleu",), tokenize="none", n_bootstrap=100, seed=9, train_limit=LIMIT,
                             workers=1)
    buckets = buckets_from_edges([8, LIMIT, 20])  # G0:8 and G9:12 within, G13:20 and G21:inf beyond
    report = evaluate_by_length(lengths, [refs], systems, buckets, options)
    assert report.beyond_buckets() == buckets[2:]
    within = [i for i, n in enumerate(lengths) if n <= LIMIT]

    def bleu(hyps, indices):
        return BLEU(tokenize="none").corpus_score([hyps[i] for i in indices], [[refs[i] for i in indices]]).score

    for number, bucket in enumerate(buckets[2:], start=3):  # buckets are numbered from 1
        indices = [i for i, n in enumerate(lengths) if bucket.contains(n)]
        for name, hyps in systems.items():
            drop = report.drops[name, bucket]["bleu"]
            assert drop.value == pytest.approx(bleu(hyps, indices) - bleu(hyps, within))
            # the interval: the bucket's own resamples (its number's stream) against the within set's (stream 0)
            ours = [bleu(hyps, [indices[j] for j in draw])
                    for draw in bootstrap.resample_indices(len(indices), 100, [9, number])]
            theirs = [bleu(hyps, [within[j] for j in draw])
                      for draw in bootstrap.resample_indices(len(within), 100, [9, 0])]
            assert (drop.ci_lo, drop.ci_hi) == pytest.approx(
                bootstrap.confidence_interval(np.subtract(ours, theirs)))
    assert report.drops["good", buckets[3]]["bleu"].value == pytest.approx(0.0)
    assert report.drops["cut", buckets[3]]["bleu"].ci_hi < -50
    assert report.drops["cut", buckets[3]]["short"].value == 100.0
    assert ("good", buckets[0]) not in report.drops  # a bucket within the limit has no drop
    table = markdown_table(report)
    assert "## Drop beyond the training limit (12 tokens)" in table
    assert "| G21:∞ − G0:12 BLEU |" in table
    cut = next(line for line in table.splitlines() if line.startswith("| cut |") and "[" in line)
    assert cut.split(" | ")[-1].startswith(f"{report.drops['cut', buckets[3]]['bleu'].value:+.1f} [")
    record = next(r for r in records(report) if r["system"] == "cut" and r["bucket"] == "G21:∞")
    assert record["bleu_drop"] == report.drops["cut", buckets[3]]["bleu"].value
    assert record["short_drop_ci_hi"] is not None and "$-$" in latex_table(report)


def test_oracle_gains_are_paired_on_the_free_systems_sentences(case):
    lengths, refs, systems, _ = case
    oracle = {"cut": systems["cut"], "cut-oracle": systems["good"]}
    options = ScoringOptions(metrics=("bleu",), tokenize="none", n_bootstrap=100, seed=2, workers=1)
    buckets = buckets_from_edges([LIMIT])
    report = evaluate_by_length(lengths, [refs], oracle, buckets, options, oracles={"cut-oracle": "cut"})
    paired = evaluate_by_length(lengths, [refs], oracle, buckets, options, baseline="cut")
    for bucket in buckets + [None]:
        gain = report.oracle_gains["cut-oracle", bucket]["bleu"]
        result = paired.cell("cut-oracle", bucket).results["bleu"]
        assert gain.value == pytest.approx(result.score - paired.cell("cut", bucket).results["bleu"].score)
        assert (gain.ci_lo, gain.ci_hi, gain.p_value) == (result.difference_ci_lo, result.difference_ci_hi,
                                                           result.p_value)
    assert report.oracle_gains["cut-oracle", buckets[0]]["bleu"].value == 0.0
    assert report.oracle_gains["cut-oracle", buckets[1]]["bleu"].p_value < 0.05
    table = markdown_table(report)
    assert "## Free and oracle-length decoding" in table and "Newman et al. 2020" in table
    row = next(line for line in table.splitlines() if line.startswith("| cut |") and "[" in line)
    assert row.count("[") == 3  # a difference per bucket and the whole set
    record = next(r for r in records(report) if r["system"] == "cut-oracle" and r["bucket"] == "all")
    assert record["oracle_of"] == "cut" and record["bleu_oracle_gain_p"] is not None
    with pytest.raises(InputError, match="'nope' is no system of the report"):
        evaluate_by_length(lengths, [refs], oracle, buckets, options, oracles={"nope": "cut"})


def test_buckets_by_each_systems_own_length(case):
    lengths, refs, systems, _ = case
    own = {name: [len(hyp.split()) for hyp in hyps] for name, hyps in systems.items()}
    options = ScoringOptions(metrics=("bleu",), tokenize="none", n_bootstrap=50, workers=1, train_limit=LIMIT)
    buckets = buckets_from_edges([LIMIT])
    report = evaluate_by_length(own, [refs], systems, buckets, options)
    assert report.buckets_per_system
    for name, hyps in systems.items():
        members = bucket_members(own[name], buckets)
        assert report.sizes[name] == [len(m) for m in members]
        for bucket, indices in zip(buckets, members):
            cell = report.cell(name, bucket)
            if not indices:  # "cut" has no translation over the limit
                assert cell.results["bleu"].score is None and name == "cut"
                continue
            expected = BLEU(tokenize="none").corpus_score([hyps[i] for i in indices], [[refs[i] for i in indices]])
            assert cell.results["bleu"].score == expected.score
            assert cell.results["bleu"].p_value is None and cell.results["bleu"].ci_lo is not None
    # "cut" stopped early: by its own lengths its long sentences moved to the first bucket
    assert report.sizes["cut"][0] > report.sizes["good"][0]
    # the whole set is the same sentences for every system: tested
    assert report.cell("cut", None).results["bleu"].p_value is not None
    table = markdown_table(report)
    assert "| *sentences* of cut |" in table and "no paired test in a bucket" in table
    assert all(record["own_buckets"] for record in records(report))
    with pytest.raises(InputError, match="no lengths for loops"):
        evaluate_by_length({"good": own["good"], "cut": own["cut"]}, [refs], systems, buckets, options)


def test_segment_scores_that_would_overflow_are_refused(case):
    """A mean of scores near 1e308 overflows to inf (the board showed inf): refused by name."""
    lengths, refs, systems, _ = case
    huge = {name: [1.5e308] * len(refs) for name in systems}
    with pytest.raises(InputError, match=r"COMET scores of good: sentence 1 has the score 1\.5e\+308"):
        evaluate_by_length(lengths, [refs], systems, buckets_from_edges([LIMIT]),
                           ScoringOptions(metrics=("bleu",), n_bootstrap=10, workers=1),
                           segment_scores={"COMET": huge})
    large = {name: [1e100] * len(refs) for name in systems}  # the bound itself: every sum finite
    report = evaluate_by_length(lengths, [refs], systems, buckets_from_edges([LIMIT]),
                                ScoringOptions(metrics=("bleu",), n_bootstrap=10, workers=1),
                                segment_scores={"COMET": large})
    assert report.cell("good", None).results["COMET"].score == pytest.approx(1e100)
    assert "Infinity" not in json_text(report) and "null" in json_text(report)
