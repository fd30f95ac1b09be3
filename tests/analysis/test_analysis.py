"""The analysis library: buckets, input parsing, lengths, and scores / confidence intervals /
paired tests checked against sacrebleu itself on real WMT21 system outputs."""
import random
import re

import numpy as np
import pytest
import sacrebleu
from packaging.requirements import Requirement
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.metrics.lib_ter import translation_edit_rate
from sacrebleu.significance import PairedTest

from relpos_analysis import bootstrap, ter
from relpos_analysis.buckets import Bucket, bucket_members, buckets_from_edges, parse_edges, quantile_edges
from relpos_analysis.cache import StatisticsCache
from relpos_analysis.report_model import ScoringOptions, evaluate_by_length
from relpos_analysis.io import InputError, check_parallel, fairseq_segments, read_lines, read_segments
from relpos_analysis.lengths import bpe_lengths, char_lengths, sentencepiece_lengths, whitespace_lengths
from relpos_analysis.metrics import MetricConfig, sentence_statistics
from relpos_analysis.report_render import latex_table, markdown_table
from relpos_analysis.textcheck import check_no_subword_markers, check_segmented, unsegmented_chars_per_token
from conftest import REPO_ROOT, SHARED

WMT21 = SHARED / "data" / "wmt21-systems"
SACREBLEU_METRICS = {"bleu": BLEU, "ter": TER, "chrf": CHRF}
# sacrebleu's names for the metrics in PairedTest's results
SACREBLEU_NAMES = {"bleu": "BLEU", "ter": "TER", "chrf": "chrF2"}


def wmt21(pair, refs=("A",), systems=(), lines=slice(None)):
    """(source, references, systems) of newstest2021 ``pair``, the sentences ``lines``."""
    if not WMT21.is_dir():
        pytest.skip(f"shared WMT21 data not found at {WMT21}")
    prefix = WMT21 / pair / f"newstest2021.{pair}"
    src, tgt = pair.split("-")
    source = read_segments(f"{prefix}.src.{src}", "source")[lines]
    references = [read_segments(f"{prefix}.ref.{ref}.{tgt}", "reference")[lines] for ref in refs]
    hyps = {name: read_segments(f"{prefix}.hyp.{name}.{tgt}", "system")[lines] for name in systems}
    return source, references, hyps


# --- buckets -------------------------------------------------------------------------------

def test_default_edges_give_the_study_buckets():
    buckets = buckets_from_edges(parse_edges("25,50,75,100"))
    assert [b.label for b in buckets] == ["G0:25", "G26:50", "G51:75", "G76:100", "G101:∞"]
    lengths = [0, 25, 26, 50, 51, 75, 76, 100, 101, 500]
    assert bucket_members(lengths, buckets) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_no_edges_is_one_bucket_for_everything():
    assert buckets_from_edges(parse_edges("none")) == [Bucket(0, None)]


@pytest.mark.parametrize("edges, message", [
    ([25, 50, 40], "strictly increasing"), ([25, 25], "strictly increasing"), ([-1, 5], "negative"),
])
def test_bad_edges_are_refused(edges, message):
    with pytest.raises(InputError, match=message):
        buckets_from_edges(edges)


def test_quantile_buckets_have_nearly_equal_sizes():
    rng = random.Random(0)
    lengths = [rng.randint(1, 80) for _ in range(1000)]
    members = bucket_members(lengths, buckets_from_edges(quantile_edges(lengths, 4)))
    assert len(members) == 4
    assert all(200 <= len(m) <= 300 for m in members)
    # ties: all-equal lengths cannot be split
    assert quantile_edges([7] * 50, 3) == []


# --- input files ---------------------------------------------------------------------------

def test_read_lines_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_lines(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(InputError, match="empty file"):
        read_lines(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("gut\nschön\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"not valid UTF-8 \(line 2"):
        read_lines(tmp_path / "latin1.txt")


def test_a_file_of_empty_lines_is_a_valid_input(tmp_path):
    (tmp_path / "nothing.txt").write_text("\n\n\n", encoding="utf-8")
    assert read_lines(tmp_path / "nothing.txt") == ["", "", ""]


def test_only_newline_ends_a_line(tmp_path):
    (tmp_path / "f.txt").write_text("a\u2028b\r\nc", encoding="utf-8")
    assert read_lines(tmp_path / "f.txt") == ["a\u2028b\r", "c"]


def test_line_count_mismatch_names_both_files():
    with pytest.raises(InputError, match="src.de has 3 lines, hyp.en has 2"):
        check_parallel([("src.de", ["a", "b", "c"]), ("ref.en", ["a", "b", "c"]), ("hyp.en", ["a", "b"])])


def test_fairseq_generate_output_is_read_in_id_order(tmp_path):
    sentences = [f"sentence number {i}" for i in range(6)]
    order = [3, 0, 5, 1, 4, 2]
    lines = ["2024-01-01 12:00:00 | INFO | fairseq_cli.generate | loading model"]
    for i in order:
        lines += [f"S-{i}\tquelle {i}", f"T-{i}\t{sentences[i]}", f"H-{i}\t-0.25\thyp {i}",
                  f"D-{i}\t-0.25\tdetok hyp {i}", f"P-{i}\t-0.1 -0.2", f"H-{i}\t-0.90\tworse hyp {i}",
                  f"D-{i}\t-0.90\tworse detok hyp {i}"]
    lines.append("Generate test with beam=5: BLEU4 = 30.00")
    path = tmp_path / "generate.out"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_segments(path, "reference") == sentences
    # the D- lines (decoded like the T- lines) where there are any, else the H- lines
    assert read_segments(path, "system") == [f"detok hyp {i}" for i in range(6)]
    without_d = tmp_path / "generate-no-d.out"
    without_d.write_text("".join(line + "\n" for line in lines if not line.startswith("D-")), encoding="utf-8")
    assert read_segments(without_d, "system") == [f"hyp {i}" for i in range(6)]
    assert read_segments(path, "source") == [f"quelle {i}" for i in range(6)]
    assert fairseq_segments(["H-0\t-1.5\t"], "H", path) == [""]
    with pytest.raises(InputError, match=r"has no hypothesis for 1 of 3 sentences \(ids \[1\]\)"):
        fairseq_segments(["H-0\t-1\ta", "H-2\t-1\tc"], "H", path)


# --- lengths -------------------------------------------------------------------------------

def test_bpe_and_sentencepiece_lengths_count_subwords(tmp_path):
    from subword_nmt.learn_bpe import learn_bpe
    import sentencepiece

    source, _, _ = wmt21("de-en", lines=slice(400))
    corpus = tmp_path / "corpus.de"
    corpus.write_text("\n".join(source) + "\n", encoding="utf-8")
    codes = tmp_path / "codes"
    with open(corpus, encoding="utf-8") as infile, open(codes, "w", encoding="utf-8") as outfile:
        learn_bpe(infile, outfile, 300)
    words = whitespace_lengths(source)
    subwords = bpe_lengths(source, codes)
    assert all(s >= w for s, w in zip(subwords, words)) and sum(subwords) > sum(words)

    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "spm"), vocab_size=400, minloglevel=2,
    )
    pieces = sentencepiece_lengths(source, tmp_path / "spm.model")
    processor = sentencepiece.SentencePieceProcessor(model_file=str(tmp_path / "spm.model"))
    assert pieces == [len(processor.encode(line, out_type=str)) for line in source]
    assert sum(pieces) > sum(words)


def test_subword_markers_are_refused_unless_stray():
    bpe = ["das ist ein Sa@@ tz", "noch ei@@ ner", "ohne", "am En@@"] * 25
    with pytest.raises(InputError, match=r"hyp\.en: 75 of 100 lines still carry BPE .*--remove-bpe"):
        check_no_subword_markers("hyp.en", bpe)
    with pytest.raises(InputError, match="SentencePiece .*--allow-subwords"):
        check_no_subword_markers("hyp.en", ["\u2581das \u2581ist"] * 3)
    check_no_subword_markers("hyp.en", ["mail me @@ home"] + ["a plain sentence"] * 199)
    check_no_subword_markers("hyp.en", ["E@@mail ist kein Marker", "plain"])
    # literal "@" tokens, as a model trained on BPE text can write them ("@@@ @@@" undone)
    check_no_subword_markers("hyp.en", ["here @do @@", "do @@s"])
    # one degenerate line in 47, from an undertrained model (a SMOKE Tatoeba board's)
    check_no_subword_markers("hyp.en", ["sb here k@s@@"] + ["what what what"] * 46)
    with pytest.raises(InputError, match="3 of 47 lines"):
        check_no_subword_markers("hyp.en", ["sb here k@s@@"] * 3 + ["what what what"] * 44)
    with pytest.raises(InputError, match="1 of 1 lines"):
        check_no_subword_markers("hyp.en", ["ei@@ ner"])


def test_unsegmented_text_is_told_from_segmented_text():
    source, references, _ = wmt21("zh-en", lines=slice(200))
    assert unsegmented_chars_per_token(source) > 20
    with pytest.raises(InputError, match="src.zh looks like text written without spaces .* use --spm-model"):
        check_segmented("src.zh", source, "use --spm-model")
    by_character = [" ".join(line.replace(" ", "")) for line in source]
    assert unsegmented_chars_per_token(by_character) is None
    assert unsegmented_chars_per_token(references[0]) is None
    assert char_lengths(["新华 时评：", "a b"]) == [5, 2]


# --- bootstrap building blocks -------------------------------------------------------------

def test_resampled_sums_equal_explicit_resamples():
    stats = np.random.default_rng(1).integers(0, 50, size=(37, 5)).astype(float)
    indices = bootstrap.resample_indices(37, 300, seed=3)
    assert np.array_equal(bootstrap.resampled_sums(stats, indices), stats[indices].sum(1))


def test_confidence_interval_uses_sacrebleus_percentiles():
    scores = list(range(1000))[::-1]
    assert bootstrap.confidence_interval(scores) == (25.0, 974.0)


# --- scores against sacrebleu ----------------------------------------------------------------

# Subsets keep the test fast: sacrebleu's TER costs milliseconds per sentence, more for the
# long Zh->En references, and the checks below run it once more as the oracle.
CASES = {
    # pair, references, systems, sentences, length edges, bucket by reference length
    "de-en": ("de-en", ("A",), ("Online-W", "Facebook-AI", "happypoet"), slice(250),
              [10, 20, 30], False),
    "de-en-multiref": ("de-en", ("A", "B"), ("UEdin", "Online-B"), slice(500, 650), [12, 24], False),
    "zh-en": ("zh-en", ("A",), ("NiuTrans", "Borderline"), slice(100, 200), [15, 30, 50], True),
}


@pytest.fixture(scope="module", params=list(CASES))
def bucket_case(request):
    pair, refs, systems, lines, edges, by_reference = CASES[request.param]
    source, references, hyps = wmt21(pair, refs, systems, lines)
    lengths = whitespace_lengths(references[0] if by_reference else source)
    report = evaluate_by_length(lengths, references, hyps, buckets_from_edges(edges),
                                ScoringOptions(n_bootstrap=50, workers=2))
    return report, references, hyps


def test_every_bucket_score_is_sacrebleus_score_of_that_subset(bucket_case):
    report, references, hyps = bucket_case
    members = bucket_members(next(iter(report.lengths.values())), report.buckets)
    assert all([len(m) for m in members] == sizes and all(sizes) for sizes in report.sizes.values())
    groups = list(zip(report.buckets, members)) + [(None, range(report.n_sentences))]
    # sacrebleu's corpus_score of a subset aggregates its sentences' statistics (extracted
    # here once per system and metric; whole files through corpus_score: the test below)
    for name, system in hyps.items():
        for metric, Metric in {**SACREBLEU_METRICS, "length": BLEU}.items():
            scorer = Metric()
            statistics = scorer._extract_corpus_statistics(system, references)
            for bucket, indices in groups:
                expected = scorer._aggregate_and_compute([statistics[i] for i in indices])
                if metric == "length":
                    assert report.cell(name, bucket).length_ratio == expected.sys_len / expected.ref_len
                else:
                    assert report.cell(name, bucket).results[metric].score == expected.score, (name, bucket, metric)


def test_one_bucket_over_whole_files_equals_sacrebleu():
    _, references, hyps = wmt21("de-en", ("A",), ("HuaweiTSC",))
    assert len(references[0]) == 1000
    report = evaluate_by_length([1] * 1000, references, hyps, buckets_from_edges([]),
                                ScoringOptions(n_bootstrap=0, workers=2))
    (bucket,) = report.buckets
    assert report.sizes == {"HuaweiTSC": [1000]}
    for name, system in hyps.items():
        for metric, Metric in SACREBLEU_METRICS.items():
            expected = Metric().corpus_score(system, references).score
            assert report.cell(name, bucket).results[metric].score == expected
            assert report.cell(name, None).results[metric].score == expected
            assert report.cell(name, bucket).results[metric].ci_lo is None


def test_empty_bucket_has_no_scores():
    _, references, hyps = wmt21("de-en", systems=("Online-W",), lines=slice(50))
    report = evaluate_by_length([3] * 50, references, hyps, buckets_from_edges([5, 10]),
                                ScoringOptions(metrics=("bleu",), n_bootstrap=20, workers=1))
    assert report.sizes == {"Online-W": [50, 0, 0]}
    assert report.cell("Online-W", report.buckets[1]).results["bleu"].score is None
    assert report.cell("Online-W", report.buckets[1]).length_ratio is None


def test_empty_translations_are_scored():
    _, references, hyps = wmt21("de-en", systems=("Online-W",), lines=slice(60))
    hyps["silent"] = [""] * 60
    report = evaluate_by_length([1] * 60, references, hyps, buckets_from_edges([]),
                                ScoringOptions(n_bootstrap=20, workers=1))
    results = report.cell("silent", None).results
    assert (results["bleu"].score, results["chrf"].score, results["ter"].score) == (0.0, 0.0, 100.0)
    assert report.cell("silent", None).length_ratio == 0.0


def test_target_language_picks_sacrebleus_tokenizer():
    # Chinese as the target: the Zh->En sources against copies with every ninth character
    # replaced; 13a sees whole clauses as words, so one changed character loses them all
    source, _, _ = wmt21("zh-en", lines=slice(80))
    hyps = {"changed": ["".join("的" if i % 9 == 4 else c for i, c in enumerate(line)) for line in source]}
    report = evaluate_by_length([1] * 80, [source], hyps, buckets_from_edges([]),
                                ScoringOptions(metrics=("bleu",), target_lang="zh", n_bootstrap=0, workers=1))
    expected = BLEU(tokenize="zh").corpus_score(hyps["changed"], [source]).score
    assert report.cell("changed", None).results["bleu"].score == expected
    assert expected > 10 * BLEU().corpus_score(hyps["changed"], [source]).score
    assert "|tok:zh|" in report.signatures["bleu"]
    explicit = evaluate_by_length([1] * 80, [source], hyps, buckets_from_edges([]),
                                  ScoringOptions(metrics=("bleu",), target_lang="zh", tokenize="char",
                                                 n_bootstrap=0, workers=1))
    assert "|tok:char|" in explicit.signatures["bleu"]


def test_statistics_do_not_depend_on_the_number_of_workers():
    _, references, hyps = wmt21("zh-en", systems=("Borderline", "Facebook-AI"), lines=slice(300))
    configs = [MetricConfig("bleu"), MetricConfig("chrf")]
    one, two = (sentence_statistics(configs, references, hyps, workers=n) for n in (1, 2))
    for metric in ("bleu", "chrf"):
        assert all(np.array_equal(one[metric][name], two[metric][name]) for name in hyps)


# --- TER: relpos_analysis.ter against sacrebleu's own search -------------------------------------

# sacrebleu's TER as the oracle costs seconds per system: one reference each (the
# fewest-edits choice among several is covered by the multi-reference bucket case), and
# the first 300 of the Zh->En system's long sentences (all 1,948 took two minutes)
@pytest.mark.parametrize("pair, refs, system, lines", [
    ("de-en", ("A",), "Online-W", slice(None)),
    ("de-en", ("B",), "happypoet", slice(None)),
    ("zh-en", ("A",), "NiuTrans", slice(300)),
])
def test_ter_edits_equal_sacrebleus_sentence_by_sentence(pair, refs, system, lines):
    _, references, hyps = wmt21(pair, refs, (system,), lines)
    ours = sentence_statistics([MetricConfig("ter")], references, hyps, workers=2)["ter"][system]
    scorer = TER()
    for i, hyp in enumerate(hyps[system]):
        expected = scorer.sentence_score(hyp, [stream[i] for stream in references])
        assert ours[i].tolist() == [expected.num_edits, expected.ref_length], (i, hyp)


def test_ter_edits_equal_sacrebleus_on_edge_cases():
    rng = random.Random(12)
    pairs = [([], []), ([], ["a", "b"]), (["a", "b"], []),
             (["x"], ["a"] * 60), (["a"] * 3, ["b"] * 80)]  # sacrebleu widens the beam here
    for _ in range(100):
        vocabulary = "abcdefghijklmnopqrst"[:rng.choice([1, 2, 3, 6, 20])]
        pairs.append(tuple([rng.choice(vocabulary) for _ in range(rng.randint(0, 20))]
                           for _ in range(2)))
    # two-letter words: so many shifts that the search stops at 1000 candidates (sacrebleu
    # counts 11 edits for this pair; without the stop it would find 5)
    rng = random.Random(3)
    pairs.append(tuple([rng.choice("ab") for _ in range(30)] for _ in range(2)))
    assert ter.edit_counts(pairs) == [translation_edit_rate(hyp, ref)[0] for hyp, ref in pairs]


def test_sacrebleu_is_within_the_versions_setup_py_allows():
    """analysis/ relies on sacrebleu internals (sentence statistics, its TER search):
    setup.py bounds the versions, and the tests above check the installed one."""
    setup = (REPO_ROOT / "setup.py").read_text(encoding="utf-8")
    (spec,) = re.findall(r'"(sacrebleu[^"]*)"', setup)
    requirement = Requirement(spec)
    assert requirement.specifier and requirement.specifier.contains(sacrebleu.__version__)
    assert not requirement.specifier.contains("2.7"), "raise the bound only after checking"


# --- the statistics cache ------------------------------------------------------------------

def test_cache_computes_only_what_is_new(tmp_path):
    _, references, hyps = wmt21("de-en", systems=("Online-W", "Facebook-AI", "happypoet"),
                                lines=slice(60))
    configs = [MetricConfig("bleu"), MetricConfig("ter")]
    cache = StatisticsCache(tmp_path / "cache")
    fresh = sentence_statistics(configs, references, hyps, workers=1)

    def cached_run(systems):
        lines = []
        stats = sentence_statistics(configs, references, systems, workers=1, cache=cache,
                                    progress=lines.append)
        for metric in stats:
            assert all(np.array_equal(stats[metric][name], fresh[metric][name]) for name in systems)
        return [re.search(r"\d+ computed, \d+ from the cache", line).group(0) for line in lines]

    first_two = {name: hyps[name] for name in ("Online-W", "Facebook-AI")}
    assert cached_run(first_two) == ["2 computed, 0 from the cache"] * 2
    assert cached_run(hyps) == ["1 computed, 2 from the cache"] * 2
    assert cached_run(hyps) == ["0 computed, 3 from the cache"] * 2

    # an edited hypothesis is a new entry; damaged entries are computed again
    hyps = dict(hyps, happypoet=["edited"] + hyps["happypoet"][1:])
    fresh = sentence_statistics(configs, references, hyps, workers=1)
    assert cached_run(hyps) == ["1 computed, 2 from the cache"] * 2
    for entry in (tmp_path / "cache").iterdir():
        entry.write_bytes(b"not numpy")
    assert cached_run(hyps) == ["3 computed, 0 from the cache"] * 2


# --- confidence intervals and paired tests -------------------------------------------------

SIGNIFICANCE_SYSTEMS = ("Online-W", "Facebook-AI", "happypoet")


@pytest.fixture(scope="module")
def significance_data():
    _, references, hyps = wmt21("de-en", systems=SIGNIFICANCE_SYSTEMS, lines=slice(150))
    lengths = [len(line.split()) for line in references[0]]
    return lengths, references, hyps


@pytest.mark.parametrize("paired_test", ["bs", "ar"])
def test_whole_set_significance_agrees_with_sacrebleu(significance_data, paired_test):
    lengths, references, hyps = significance_data
    n = 200
    report = evaluate_by_length(lengths, references, hyps, buckets_from_edges([12]),
                                ScoringOptions(n_bootstrap=n, seed=12345, paired_test=paired_test, ar_trials=n,
                                               workers=1))
    metrics = {name: Metric() for name, Metric in SACREBLEU_METRICS.items()}
    _, sacrebleu_results = PairedTest(list(hyps.items()), metrics, references, test_type=paired_test,
                                      n_samples=n, n_ar_confidence=-1)()
    for metric in SACREBLEU_METRICS:
        for k, name in enumerate(hyps):
            expected = sacrebleu_results[SACREBLEU_NAMES[metric]][k]
            ours = report.cell(name, None).results[metric]
            assert ours.score == expected.score
            if name == report.baseline:
                assert ours.p_value is None
            else:
                # the same draws: only float32 (sacrebleu) against float64 (here) may differ
                assert ours.p_value == pytest.approx(expected.p_value, abs=2 / (n + 1))
            if paired_test == "bs":
                assert (ours.ci_hi - ours.ci_lo) / 2 == pytest.approx(expected.ci, abs=1e-3)


def test_intervals_and_p_values_are_reproducible_with_a_seed(significance_data):
    lengths, references, hyps = significance_data

    def run(seed):
        report = evaluate_by_length(lengths, references, hyps, buckets_from_edges([10, 20]),
                                    ScoringOptions(metrics=("bleu", "chrf"), n_bootstrap=100, seed=seed, workers=1))
        return [(c.system, c.bucket, m, r.ci_lo, r.ci_hi, r.p_value)
                for c in report.cells for m, r in c.results.items()]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_intervals_contain_the_score_and_the_baseline_has_no_p_value(significance_data):
    lengths, references, hyps = significance_data
    report = evaluate_by_length(lengths, references, hyps, buckets_from_edges([10, 20]),
                                ScoringOptions(metrics=("bleu",), n_bootstrap=200, workers=1), baseline="happypoet")
    for cell in report.cells:
        result = cell.results["bleu"]
        assert result.ci_lo <= result.score <= result.ci_hi
        assert (result.p_value is None) == (cell.system == "happypoet")
        if result.p_value is not None:
            assert 0 < result.p_value <= 1


@pytest.mark.parametrize("paired_test", ["bs", "ar"])
def test_a_system_identical_to_the_baseline_is_marked_not_significant(significance_data, paired_test):
    lengths, references, hyps = significance_data
    systems = {"Online-W": hyps["Online-W"], "copy": list(hyps["Online-W"]),
               "happypoet": hyps["happypoet"]}
    # "mixed": the copy with the sentences over 12 tokens taken from happypoet
    systems["mixed"] = [b if length > 12 else a
                        for a, b, length in zip(hyps["Online-W"], hyps["happypoet"], lengths)]
    report = evaluate_by_length(lengths, references, systems, buckets_from_edges([12]),
                                ScoringOptions(metrics=("bleu", "ter"), n_bootstrap=100, paired_test=paired_test,
                                               ar_trials=100, workers=1))
    short, long = report.buckets
    for bucket in (short, long, None):
        copy = report.cell("copy", bucket)
        assert copy.identical_to_baseline
        assert all(result.p_value == 1.0 for result in copy.results.values())
        assert not report.cell("happypoet", bucket).identical_to_baseline
    assert report.cell("mixed", short).identical_to_baseline
    assert not report.cell("mixed", long).identical_to_baseline
    assert not report.cell("mixed", None).identical_to_baseline

    table = markdown_table(report)
    row = next(line for line in table.splitlines() if line.startswith("| copy |"))
    assert all(cell.endswith("=") for cell in row.strip("| ").split(" | ")[1:])
    mixed = next(line for line in table.splitlines() if line.startswith("| mixed |"))
    assert mixed.split(" | ")[1].endswith("=") and not mixed.split(" | ")[3].endswith("=")
    assert "= the same sentence statistics as Online-W" in table
    scores = latex_table(report).split("\\end{table}")[0]  # the first table, the scores'
    assert scores.count("$^{=}$") == 6 + 2 + 1  # copy, mixed's short bucket, the note


def test_unknown_baseline_is_refused(significance_data):
    lengths, references, hyps = significance_data
    with pytest.raises(InputError, match="unknown baseline 'nope'"):
        evaluate_by_length(lengths, references, hyps, buckets_from_edges([]), baseline="nope")
