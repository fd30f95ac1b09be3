"""The report's outputs, rendered to strings and bytes (writing them is the CLI's job).

Tables follow the study's Table 2: systems as rows, buckets as columns with one
sub-column per metric, and a row with each bucket's size.  A last "all" column holds the
scores on the whole test set.  The tables are relpos_analysis.tables' model, written by its
writers.
"""
import math
from typing import Dict, List, Optional, Sequence

from .buckets import Bucket
from .report_model import LENGTH_BIAS_THRESHOLD, TEST_NAMES, Cell, Change, LengthReport, length_bias
from .failures import FAILURES, LOG_PROB
from .figures import figure_bytes, figure_title, panel_grid, plt
from .metrics import LOWER_IS_BETTER, METRICS, SACREBLEU_METRICS, display_decimals, display_name
from . import tables
from .tables import DELTA, EMPTY, MINUS, FEW, SAME, SENTENCES, SIGNIFICANT, Raw, Table, Text

SIGNIFICANCE_LEVEL = 0.05
# Below this many sentences the tables mark no significance: resampling a handful of
# sentences yields tiny p-values that mean nothing (with 2 sentences both sacrebleu tests
# can give p < 0.001).  The p-values stay in the JSON/CSV records.
MIN_SIZE_FOR_MARKS = 30
WHOLE_SET_LABEL = "all"


def bucket_fields(bucket: Optional[Bucket]) -> dict:
    """A record's bucket: its label and inclusive ends (the whole set: "all", both null;
    an open bucket: bucket_hi null)."""
    return {"bucket": bucket.label if bucket else WHOLE_SET_LABEL,
            "bucket_lo": bucket.lo if bucket else None,
            "bucket_hi": bucket.hi if bucket else None}


def records(report: LengthReport) -> List[dict]:
    """One flat record per (system, bucket), the whole set last; then one per failed system
    (its ``failure``, every score null).  sacrebleu's metrics always have their columns (null
    where not computed), then the segment-score metrics and the failure columns; a bucket
    beyond the training limit has each metric's drop from within it (``METRIC_drop``, with
    its interval), an oracle-length system each metric's gain over its free decoding
    (``METRIC_oracle_gain``, with its interval and p-value)."""
    metrics = all_metric_names(report)
    rows = []
    for cell in report.cells:
        row = {"system": cell.system, "baseline": report.baseline, **bucket_fields(cell.bucket),
               "n": cell.n, "own_buckets": report.buckets_per_system,
               "oracle_of": report.oracles.get(cell.system), "failure": None,
               "length_ratio": cell.length_ratio, "identical_to_baseline": cell.identical_to_baseline}
        drops = report.drops.get((cell.system, cell.bucket), {})
        gains = report.oracle_gains.get((cell.system, cell.bucket), {})
        for metric in metrics:
            result = cell.results.get(metric)
            row[metric] = result.score if result else None
            row[f"{metric}_ci_lo"] = result.ci_lo if result else None
            row[f"{metric}_ci_hi"] = result.ci_hi if result else None
            row[f"{metric}_p"] = result.p_value if result else None
            if report.train_limit is not None:
                row.update(change_fields(f"{metric}_drop", drops.get(metric)))
            if report.oracles:
                row.update(change_fields(f"{metric}_oracle_gain", gains.get(metric), with_p=True))
        for metric in metrics:
            row[f"{metric}_signature"] = report.signatures.get(metric)
        if report.reference_row is not None:
            row["reference_row"] = cell.system == report.reference_row
            if row["reference_row"] and cell.bucket is None:
                row.update({f"{bias.metric}_length_bias": bias.worsening
                            for bias in length_bias(report, cell.system, MIN_SIZE_FOR_MARKS)})
        rows.append(row)
    for name, why in report.failed.items():
        rows.append({"system": name, "baseline": report.baseline, "bucket": None, "bucket_lo": None,
                     "bucket_hi": None, "n": None, "failure": why})
    return rows


def all_metric_names(report: LengthReport) -> List[str]:
    """sacrebleu's metrics, whether computed or not, then the others of the report."""
    return list(SACREBLEU_METRICS) + [metric for metric in report.all_metrics if metric not in SACREBLEU_METRICS]


def change_fields(name: str, change: Optional[Change], with_p: bool = False) -> Dict[str, Optional[float]]:
    fields = {name: change.value if change else None, f"{name}_ci_lo": change.ci_lo if change else None,
              f"{name}_ci_hi": change.ci_hi if change else None}
    if with_p:
        fields[f"{name}_p"] = change.p_value if change else None
    return fields


def json_text(report: LengthReport) -> str:
    return tables.json_text(records(report))


def csv_text(report: LengthReport) -> str:
    return tables.csv_text(records(report))


def report_tables(report: LengthReport, title: Optional[str] = None, failed_note: bool = True) -> List[Table]:
    """The scores per bucket, the failures per bucket, and where they apply the drop beyond
    the training limit and the comparison of free with oracle-length decoding; with
    ``failed_note``, the failed systems in a note under the scores."""
    score_notes = (_notes(report) + segment_scores_note(report.metrics) + reference_row_note(report)
                   + (_failed_note(report) if failed_note else []))
    result = [metric_table(report, report.metrics, title, score_notes),
              metric_table(report, report.failure_metrics, "Failures per length bucket",
                           [failure_note(report.failure_metrics, report.signatures)])]
    if report.drops:
        result.append(drop_table(report))
    if report.oracles:
        result.append(oracle_table(report))
    return result


def table(report: LengthReport, title: Optional[str] = None) -> Table:
    """The scores per bucket, the report's first table."""
    return report_tables(report, title)[0]


def metric_table(report: LengthReport, metrics: Sequence[str], title: Optional[str],
                 notes: List[Text]) -> Table:
    """Systems as rows, a column per bucket (then the whole set) and metric; a row of bucket
    sizes above them, or one per system where each has its own buckets."""
    groups = _groups(report)
    width = len(metrics)
    columns = [tables.Column("system", align="l")] + [
        tables.Column(display_name(metric), group_label(bucket))
        for bucket in groups for metric in metrics
    ]
    size_rows = [[SENTENCES if not report.buckets_per_system else (SENTENCES, f" of {system}")]
                 + [tables.Cell(size_text(size), width) for size in _group_sizes(report, system)]
                 for system in (report.systems if report.buckets_per_system else report.systems[:1])]
    decimals = {metric: display_decimals(metric, [c.results[metric].score for c in report.cells])
                for metric in metrics}
    rows = size_rows + [
        [system_label(report.baseline, system)]
        + [_score_text(report.cell(system, bucket), metric, decimals[metric])
           for bucket in groups for metric in metrics]
        for system in report.systems
    ]
    return Table(columns, rows, head_rows=len(size_rows), title=title, notes=notes,
                 signatures=[(display_name(metric), report.signatures[metric])
                             for metric in metrics if metric in METRICS])


def drop_table(report: LengthReport) -> Table:
    """Per system, each score of every bucket beyond the training limit minus its score
    within it, with the 95% interval."""
    within, beyond = report.within_bucket(), report.beyond_buckets()
    columns = [tables.Column("system", align="l")] + [
        tables.Column(display_name(metric), (group_label(bucket), MINUS, group_label(within)))
        for bucket in beyond for metric in report.metrics]
    rows = [[system_label(report.baseline, system)]
            + [change_text(report.drops[system, bucket][metric], display_decimals(metric, []))
               for bucket in beyond for metric in report.metrics]
            for system in report.systems]
    own = " (each system's own buckets)" if report.buckets_per_system else ""
    notes: List[Text] = [(
        f"A bucket's score minus the score of every sentence within the training limit of "
        f"{report.train_limit} tokens{own}: negative BLEU and chrF, positive TER, is a loss. In brackets "
        "the 95% interval of the difference, each set resampled on its own "
        f"({report.n_bootstrap} resamples of each, seed {report.seed}; the sets hold different sentences, so "
        "there is nothing to pair). The records have every metric's drop." if report.n_bootstrap
        else "A bucket's score minus the score of every sentence within the training limit; no resampling "
             "(--bootstrap 0): no intervals.")]
    return Table(columns, rows, title=f"Drop beyond the training limit ({report.train_limit} tokens)",
                 notes=notes)


def oracle_table(report: LengthReport) -> Table:
    """Per system decoded both ways, the main metric of free and of oracle-length decoding
    per bucket, and their difference with its paired 95% interval."""
    metric = main_metric(report.metrics)
    name = display_name(metric)
    groups = _groups(report)
    columns = [tables.Column("system", align="l")] + [
        tables.Column(label, group_label(bucket))
        for bucket in groups for label in (f"{name} free", f"{name} oracle", (DELTA, " [95% CI]"))]
    rows = []
    for oracle, free in report.oracles.items():
        cells: List[Text] = [free]
        for bucket in groups:
            free_cell, oracle_cell = report.cell(free, bucket), report.cell(oracle, bucket)
            gain = report.oracle_gains[oracle, bucket][metric]
            cells += [_score_text(free_cell, metric, 1, marks=False),
                      _score_text(oracle_cell, metric, 1, marks=False),
                      change_text(gain, 1, significant=is_significant(gain.p_value, free_cell.n))]
        rows.append(cells)
    own = " (the free system's buckets)" if report.buckets_per_system else ""
    notes: List[Text] = [(
        "Oracle-length decoding: each sentence decoded with its reference's length in target subword tokens, "
        "end of sentence forbidden before it and forced at it (Newman et al. 2020). ", DELTA,
        f": oracle minus free on the same sentences{own}, with the 95% interval of the paired resamples; ",
        SIGNIFICANT, f" p < {SIGNIFICANCE_LEVEL} ({TEST_NAMES[report.paired_test]}). What oracle lengths win "
        "is what the decision to stop cost; what is left of the drop beyond the training limit is not the "
        "stopping decision.")]
    return Table(columns, rows, title="Free and oracle-length decoding", notes=notes)


def main_metric(metrics: Sequence[str]) -> str:
    return "bleu" if "bleu" in metrics else metrics[0]


def change_text(change: Optional[Change], decimals: int, significant: bool = False) -> Text:
    """A difference with its interval: "-12.0 [-15.0, -9.0]"."""
    if change is None or change.value is None:
        return EMPTY
    text = f"{change.value:+.{decimals}f}"
    if change.ci_lo is not None:
        text += f" [{change.ci_lo:+.{decimals}f}, {change.ci_hi:+.{decimals}f}]"
    return (text, SIGNIFICANT) if significant else text


def failure_note(metrics: Sequence[str], signatures: Dict[str, str]) -> Text:
    """What the failure columns count (their signatures say it too)."""
    shares = [f"{display_name(metric)}: {signatures[metric].split('|')[0].split(':', 1)[1]}"
              for metric in metrics if metric in FAILURES]
    note = ("Failure shares in percent of the bucket's sentences, exclusive in this order, in tokens of BLEU's "
            "tokenizer against the first reference (docs/analysis.md): " + "; ".join(shares) + ".") if shares else ""
    if LOG_PROB in metrics:
        note += (f" {display_name(LOG_PROB)}: the mean over the sentences of each translation's mean "
                 "log2-probability per token, end of sentence included (fairseq-generate's scores): the "
                 "model's confidence, lowest where it hallucinates (Guerreiro et al. 2023).")
    return note.lstrip() + " Marks, intervals and tests as for the scores."


def markdown_table(report: LengthReport, title: Optional[str] = None) -> str:
    """The tables, then the failed systems as a list."""
    text = "\n".join(tables.markdown(table) for table in report_tables(report, title, failed_note=False))
    if report.failed:
        text += "\nNot in this report, because they failed:\n\n" + "".join(
            f"- {name}: {why}\n" for name, why in report.failed.items())
    return text


def latex_table(report: LengthReport, title: Optional[str] = None) -> str:
    return "\n".join(tables.latex(table) for table in report_tables(report, title))


def bucket_plot(report: LengthReport, title: Optional[str] = None,
                formats: Sequence[str] = ("png", "pdf")) -> Dict[str, bytes]:
    """Score against bucket, one panel per metric and one line per system, with the 95%
    bootstrap confidence intervals as error bars."""
    figure, axes = plt.subplots(
        1, len(report.metrics), figsize=(4.2 * len(report.metrics) + 2.5, 4.2),
        layout="constrained", squeeze=False,
    )
    for axis, metric in zip(axes[0], report.metrics):
        _score_lines(axis, report, metric, [(system, system, "-") for system in report.systems])
        if metric in METRICS:
            direction = "lower" if metric in LOWER_IS_BETTER else "higher"
            axis.set_ylabel(f"{display_name(metric)} ({direction} is better)")
        else:
            axis.set_ylabel(f"{metric} (mean of the segment scores)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize="small")
    return _rendered(figure, title, formats)


def oracle_plot(report: LengthReport, title: Optional[str] = None,
                formats: Sequence[str] = ("png", "pdf")) -> Dict[str, bytes]:
    """The main metric per bucket of each system decoded both ways: a panel per system, free
    decoding solid, oracle-length decoding dashed, 95% intervals as error bars."""
    metric = main_metric(report.metrics)
    pairs = list(report.oracles.items())
    figure, axes = panel_grid(len(pairs), (4.6, 4.2), extra=(1, 0))
    for axis, (oracle, free) in zip(axes.flat, pairs):
        _score_lines(axis, report, metric, [(free, "free", "-"), (oracle, "oracle length", "--")],
                     emphasise_baseline=False)
        axis.set_title(free)
        axis.legend(fontsize="small")
    if not pairs:
        _say(axes[0][0], "no oracle-length decoding given (--oracle-decoding ORACLE=FREE)")
    for axis in axes[:, 0]:
        axis.set_ylabel(f"{display_name(metric)}")
    return _rendered(figure, title, formats)


def failures_plot(report: LengthReport, title: Optional[str] = None,
                  formats: Sequence[str] = ("png", "pdf")) -> Dict[str, bytes]:
    """The failure shares of each bucket stacked, a panel per system."""
    shares = {system: [[report.cell(system, bucket).results[failure].score for bucket in report.buckets]
                       for failure in FAILURES]
              for system in report.systems}
    return stacked_failures(shares, [bucket.label for bucket in report.buckets], title, formats)


def stacked_failures(shares: Dict[str, List[List[Optional[float]]]], labels: Sequence[str],
                     title: Optional[str], formats: Sequence[str]) -> Dict[str, bytes]:
    """``shares[system][failure][bucket]`` (percent; None for an empty bucket) as stacked
    bars, a panel per system: the report's and the board's failures plot."""
    figure, axes = panel_grid(len(shares), (3.6, 3.2), extra=(1.5, 0))
    positions = range(len(labels))
    for axis, (system, by_failure) in zip(axes.flat, shares.items()):
        bottom = [0.0] * len(labels)
        for failure, values in zip(FAILURES, by_failure):
            heights = [0.0 if value is None else value for value in values]
            axis.bar(positions, heights, bottom=bottom, label=FAILURE_LABELS[failure],
                     color=FAILURE_COLOURS[failure])
            bottom = [b + h for b, h in zip(bottom, heights)]
        axis.set_xticks(list(positions), labels, fontsize="small")
        axis.set_title(system, fontsize="medium")
        axis.grid(axis="y", alpha=0.3)
    if not shares:
        _say(axes[0][0], "no system has translations")
    for axis in axes[:, 0]:
        axis.set_ylabel("sentences (%)")
    handles, names = axes[0][0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, names, loc="outside right upper", fontsize="small")
    return _rendered(figure, title, formats)


FAILURE_LABELS = {"empty": "empty", "short": "short (stopped early)", "loop": "loop (repeats)"}
FAILURE_COLOURS = {"empty": "tab:gray", "short": "tab:orange", "loop": "tab:red"}


def _score_lines(axis, report: LengthReport, metric: str, lines, emphasise_baseline: bool = True) -> None:
    """One line per (system, label, style) of ``metric`` against the buckets, offset side by
    side, with 95% intervals; the buckets labelled with their sizes where they are shared."""
    buckets = report.buckets
    positions = list(range(len(buckets)))
    spread = 0.5 / max(len(lines), 1)
    for k, (system, label, style) in enumerate(lines):
        results = [report.cell(system, bucket).results[metric] for bucket in buckets]
        errors = [
            [_error(result.score, result.ci_lo) for result in results],
            [_error(result.ci_hi, result.score) for result in results],
        ]
        offset = (k - (len(lines) - 1) / 2) * spread
        axis.errorbar(
            [x + offset for x in positions], [_nan_if_none(result.score) for result in results],
            yerr=errors if report.n_bootstrap > 0 else None, linestyle=style,
            marker="o", markersize=4, capsize=3,
            linewidth=2.2 if emphasise_baseline and system == report.baseline else 1.4,
            label=_legend_label(report, system) if label == system else label,
        )
    sizes = ([f"\nn={n}" for n in report.sizes[report.systems[0]]] if not report.buckets_per_system
             else [""] * len(buckets))
    axis.set_xticks(positions, [f"{b.label}{n}" for b, n in zip(buckets, sizes)])
    axis.set_xlabel("length bucket" + (" (each system's own)" if report.buckets_per_system else ""))
    axis.grid(axis="y", alpha=0.3)


def _say(axis, text: str) -> None:
    axis.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=axis.transAxes)
    axis.set_xticks([])


def _rendered(figure, title: Optional[str], formats: Sequence[str]) -> Dict[str, bytes]:
    if title:
        figure_title(figure, title)
    rendered = {fmt: figure_bytes(figure, fmt) for fmt in formats}
    plt.close(figure)
    return rendered


def length_histogram(
    lengths: Dict[str, Sequence[int]],
    buckets: Sequence[Bucket],
    train_limit: Optional[int] = None,
    title: Optional[str] = None,
    length_label: str = "source length J (tokens)",
    fmt: str = "png",
) -> bytes:
    """Histogram of sentence lengths (``lengths[system]``: one histogram where every system
    has the same lengths, else an outline per system) with the bucket boundaries dotted and,
    if given, the training-length limit as a red line."""
    distinct = {tuple(values): system for system, values in lengths.items()}
    longest = max(max(values) for values in distinct)
    every = [length for values in distinct for length in values]
    figure, axis = plt.subplots(figsize=(7, 4), layout="constrained")
    bins = range(longest + 2) if longest <= 200 else 100  # one bar per length, when they fit
    align = "left" if longest <= 200 else "mid"
    if len(distinct) == 1:
        axis.hist(list(every), bins=bins, align=align, color="tab:blue", alpha=0.8)
    else:
        for values, system in distinct.items():
            axis.hist(list(values), bins=bins, align=align, histtype="step", linewidth=1.4, label=system)
    for bucket in buckets[:-1]:
        axis.axvline(bucket.hi + 0.5, color="gray", linestyle=":", linewidth=1)
    if train_limit is not None:
        longer = sum(length > train_limit for length in every)
        axis.axvline(train_limit + 0.5, color="tab:red", linestyle="--",
                     label=f"training limit {train_limit} ({longer} of {len(every)} longer)")
    if train_limit is not None or len(distinct) > 1:
        axis.legend(fontsize="small")
    axis.set_xlabel(length_label)
    axis.set_ylabel("sentences")
    buckets_text = ", ".join(bucket.label for bucket in buckets)
    n_sentences = len(next(iter(lengths.values())))
    figure_title(figure, title or f"{n_sentences} sentences; buckets {buckets_text}")
    rendered = figure_bytes(figure, fmt)
    plt.close(figure)
    return rendered


def group_label(bucket: Optional[Bucket]) -> Text:
    return Raw(bucket.label, bucket.latex_label) if bucket else WHOLE_SET_LABEL


def size_text(size: int) -> Text:
    """A bucket's size, marked when it is too small for significance marks."""
    return (str(size), FEW) if is_thin(size) else str(size)


def is_thin(size: int) -> bool:
    return 0 < size < MIN_SIZE_FOR_MARKS


def is_significant(p_value: Optional[float], size: int) -> bool:
    return p_value is not None and p_value < SIGNIFICANCE_LEVEL and not is_thin(size)


def system_label(baseline: str, system: str) -> str:
    return f"{system} (baseline)" if system == baseline else system


def _groups(report: LengthReport) -> List[Optional[Bucket]]:
    return list(report.buckets) + [None]


def _group_sizes(report: LengthReport, system: str) -> List[int]:
    return list(report.sizes[system]) + [report.n_sentences]


def _legend_label(report: LengthReport, system: str) -> str:
    """The system's label, saying so where its line hides under the baseline's."""
    if report.cell(system, None).identical_to_baseline:
        return f"{system} (identical to {report.baseline})"
    return system_label(report.baseline, system)


def _score_text(cell: Cell, metric: str, decimals: int, marks: bool = True) -> Text:
    """The score; with ``marks``, SIGNIFICANT after one significantly different from the
    baseline's in the same bucket, SAME after one whose statistics are the baseline's."""
    result = cell.results[metric]
    if result.score is None:
        return EMPTY
    score = f"{result.score:.{decimals}f}"
    if not marks:
        return score
    if cell.identical_to_baseline:
        return score, SAME
    return (score, SIGNIFICANT) if is_significant(result.p_value, cell.n) else score


def _notes(report: LengthReport) -> List[Text]:
    """What the table's marks mean, and where the segment scores come from."""
    note: List[Text] = []
    if not report.has_significance:
        note.append("No resampling (--bootstrap 0): no confidence intervals or tests.")
    else:
        samples = (f"{report.ar_trials} trials" if report.paired_test == "ar"
                   else f"{report.n_bootstrap} resamples")
        note += [SIGNIFICANT, f" p < {SIGNIFICANCE_LEVEL} against {report.baseline} in the same "
                 f"bucket ({TEST_NAMES[report.paired_test]}, {samples}, seed {report.seed}; "
                 "not corrected for multiple comparisons)."]
        if report.buckets_per_system:
            note += [" Each system's buckets hold the sentences of its own translation length, so the "
                     "buckets of two systems hold different sentences: no paired test in a bucket, "
                     "only on the whole set."]
        if any(is_thin(size) for sizes in report.sizes.values() for size in sizes):
            note += [" ", FEW, f" fewer than {MIN_SIZE_FOR_MARKS} sentences: too few to "
                     "resample, so no marks (p-values are in the JSON/CSV output)."]
    if any(cell.identical_to_baseline for cell in report.cells):
        note += [" ", SAME, f" the same sentence statistics as {report.baseline} (the same "
                 "translations, or ones that differ only in what the metrics ignore): no "
                 "difference to test (p = 1)."]
    return [tuple(note)]


def reference_row_note(report: LengthReport) -> List[Text]:
    """What the reference row is, and the metrics whose score of it worsens with length."""
    row = report.reference_row
    if row is None:
        return []
    note = (f"{row}: the second reference, scored as a system against the other reference(s): a human "
            "translation's score per bucket.")
    biases = length_bias(report, row, MIN_SIZE_FOR_MARKS)
    flagged = [bias for bias in biases if bias.flagged]
    if flagged:
        changes = "; ".join(
            f"{display_name(bias.metric)} from {bias.first_score:.{decimals}f} ({bias.first.label}) to "
            f"{bias.last_score:.{decimals}f} ({bias.last.label}), {bias.worsening:.0%} worse"
            for bias in flagged
            for decimals in [display_decimals(bias.metric, [bias.first_score, bias.last_score])])
        note += (f" Length bias of the metric (its score of the human translation worsens by more than "
                 f"{LENGTH_BIAS_THRESHOLD:.0%} from the shortest bucket to the longest of {MIN_SIZE_FOR_MARKS} "
                 f"sentences or more): {changes}; so much of every system's change with length is the metric's own.")
    elif biases:
        note += (f" No metric's score of it worsens by more than {LENGTH_BIAS_THRESHOLD:.0%} from the shortest "
                 f"bucket to the longest of {MIN_SIZE_FOR_MARKS} sentences or more.")
    return [note]


def _failed_note(report: LengthReport) -> List[Text]:
    if not report.failed:
        return []
    return ["Not in this report, because they failed: "
            + "; ".join(f"{name}: {why}" for name, why in report.failed.items()) + "."]


def segment_scores_note(metrics: Sequence[str]) -> List[Text]:
    """Where the scores of the metrics computed elsewhere come from, if there are any."""
    segment_metrics = [metric for metric in metrics if metric not in METRICS]
    if not segment_metrics:
        return []
    return [f"{', '.join(segment_metrics)}: the mean of the segment scores given with "
            "--segment-scores, tested and summarized as BLEU is."]


def _nan_if_none(value: Optional[float]) -> float:
    return math.nan if value is None else value


def _error(upper: Optional[float], lower: Optional[float]) -> float:
    return math.nan if upper is None or lower is None else upper - lower
