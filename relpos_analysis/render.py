"""The report's outputs, rendered to strings and bytes (writing them is the CLI's job).

Tables follow the study's Table 2: systems as rows, buckets as columns with one
sub-column per metric, and a row with each bucket's size.  A last "all" column holds the
scores on the whole test set.  The tables are relpos_analysis.tables' model, written by its
writers.
"""
import math
from typing import Dict, List, Optional, Sequence

from .buckets import Bucket
from .evaluate import TEST_NAMES, Cell, LengthReport
from .figures import figure_bytes, figure_title, plt
from .metrics import LOWER_IS_BETTER, METRICS, display_decimals, display_name
from . import tables
from .tables import EMPTY, FEW, SAME, SENTENCES, SIGNIFICANT, Raw, Table, Text

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
    """One flat record per (system, bucket), the whole set last.  sacrebleu's metrics
    always have their columns (null where not computed), then the segment-score metrics."""
    metrics = list(METRICS) + [metric for metric in report.metrics if metric not in METRICS]
    rows = []
    for cell in report.cells:
        row = {"system": cell.system, "baseline": report.baseline, **bucket_fields(cell.bucket),
               "n": cell.n, "length_ratio": cell.length_ratio,
               "identical_to_baseline": cell.identical_to_baseline}
        for metric in metrics:
            result = cell.results.get(metric)
            row[metric] = result.score if result else None
            row[f"{metric}_ci_lo"] = result.ci_lo if result else None
            row[f"{metric}_ci_hi"] = result.ci_hi if result else None
            row[f"{metric}_p"] = result.p_value if result else None
        for metric in metrics:
            row[f"{metric}_signature"] = report.signatures.get(metric)
        rows.append(row)
    return rows


def json_text(report: LengthReport) -> str:
    return tables.json_text(records(report))


def csv_text(report: LengthReport) -> str:
    return tables.csv_text(records(report))


def table(report: LengthReport, title: Optional[str] = None) -> Table:
    groups = _groups(report)
    width = len(report.metrics)
    columns = [tables.Column("system", align="l")] + [
        tables.Column(display_name(metric), group_label(bucket))
        for bucket in groups for metric in report.metrics
    ]
    # a bucket's size spans its metrics' columns
    sizes = [SENTENCES] + [tables.Cell(size_text(size), width) for size in _group_sizes(report)]
    decimals = {metric: display_decimals(metric, [c.results[metric].score for c in report.cells])
                for metric in report.metrics}
    rows = [sizes] + [
        [system_label(report.baseline, system)]
        + [_score_text(report.cell(system, bucket), metric, decimals[metric])
           for bucket in groups for metric in report.metrics]
        for system in report.systems
    ]
    return Table(columns, rows, head_rows=1, title=title, notes=_notes(report),
                 signatures=[(display_name(metric), report.signatures[metric])
                             for metric in report.metrics if metric in METRICS])


def markdown_table(report: LengthReport, title: Optional[str] = None) -> str:
    return tables.markdown(table(report, title))


def latex_table(report: LengthReport, title: Optional[str] = None) -> str:
    return tables.latex(table(report, title))


def bucket_plot(report: LengthReport, title: Optional[str] = None,
                formats: Sequence[str] = ("png", "pdf")) -> Dict[str, bytes]:
    """Score against bucket, one panel per metric and one line per system, with the 95%
    bootstrap confidence intervals as error bars."""
    buckets = report.buckets
    positions = list(range(len(buckets)))
    spread = 0.5 / max(len(report.systems), 1)
    figure, axes = plt.subplots(
        1, len(report.metrics), figsize=(4.2 * len(report.metrics) + 2.5, 4.2),
        layout="constrained", squeeze=False,
    )
    for axis, metric in zip(axes[0], report.metrics):
        for k, system in enumerate(report.systems):
            results = [report.cell(system, bucket).results[metric] for bucket in buckets]
            scores = [_nan_if_none(result.score) for result in results]
            errors = [
                [_error(result.score, result.ci_lo) for result in results],
                [_error(result.ci_hi, result.score) for result in results],
            ]
            offset = (k - (len(report.systems) - 1) / 2) * spread
            axis.errorbar(
                [x + offset for x in positions], scores,
                yerr=errors if report.n_bootstrap > 0 else None,
                marker="o", markersize=4, capsize=3,
                linewidth=2.2 if system == report.baseline else 1.2,
                label=_legend_label(report, system),
            )
        axis.set_xticks(positions, [f"{b.label}\nn={n}" for b, n in zip(buckets, report.sizes)])
        if metric in METRICS:
            direction = "lower" if metric in LOWER_IS_BETTER else "higher"
            axis.set_ylabel(f"{display_name(metric)} ({direction} is better)")
        else:
            axis.set_ylabel(f"{metric} (mean of the segment scores)")
        axis.set_xlabel("length bucket")
        axis.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize="small")
    if title:
        figure_title(figure, title)
    rendered = {fmt: figure_bytes(figure, fmt) for fmt in formats}
    plt.close(figure)
    return rendered


def length_histogram(
    lengths: Sequence[int],
    buckets: Sequence[Bucket],
    train_limit: Optional[int] = None,
    title: Optional[str] = None,
    length_label: str = "source length J (tokens)",
    fmt: str = "png",
) -> bytes:
    """Histogram of sentence lengths with the bucket boundaries dotted and, if given, the
    training-length limit as a red line."""
    longest = max(lengths)
    figure, axis = plt.subplots(figsize=(7, 4), layout="constrained")
    if longest <= 200:  # one bar per length
        axis.hist(lengths, bins=range(longest + 2), align="left", color="tab:blue", alpha=0.8)
    else:
        axis.hist(lengths, bins=100, color="tab:blue", alpha=0.8)
    for bucket in buckets[:-1]:
        axis.axvline(bucket.hi + 0.5, color="gray", linestyle=":", linewidth=1)
    if train_limit is not None:
        longer = sum(length > train_limit for length in lengths)
        axis.axvline(train_limit + 0.5, color="tab:red", linestyle="--",
                     label=f"training limit {train_limit} ({longer} of {len(lengths)} longer)")
        axis.legend()
    axis.set_xlabel(length_label)
    axis.set_ylabel("sentences")
    buckets_text = ", ".join(bucket.label for bucket in buckets)
    figure_title(figure, title or f"{len(lengths)} sentences; buckets {buckets_text}")
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


def _group_sizes(report: LengthReport) -> List[int]:
    return list(report.sizes) + [len(report.lengths)]


def _legend_label(report: LengthReport, system: str) -> str:
    """The system's label, saying so where its line hides under the baseline's."""
    if report.cell(system, None).identical_to_baseline:
        return f"{system} (identical to {report.baseline})"
    return system_label(report.baseline, system)


def _score_text(cell: Cell, metric: str, decimals: int) -> Text:
    """The score; SIGNIFICANT after one significantly different from the baseline's in the
    same bucket, SAME after one whose statistics are the baseline's."""
    result = cell.results[metric]
    if result.score is None:
        return EMPTY
    score = f"{result.score:.{decimals}f}"
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
        if any(is_thin(size) for size in report.sizes):
            note += [" ", FEW, f" fewer than {MIN_SIZE_FOR_MARKS} sentences: too few to "
                     "resample, so no marks (p-values are in the JSON/CSV output)."]
    if any(cell.identical_to_baseline for cell in report.cells):
        note += [" ", SAME, f" the same sentence statistics as {report.baseline} (the same "
                 "translations, or ones that differ only in what the metrics ignore): no "
                 "difference to test (p = 1)."]
    return [tuple(note)] + segment_scores_note(report.metrics)


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
