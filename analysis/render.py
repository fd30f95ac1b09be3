"""The report's outputs, rendered to strings and bytes (writing them is the CLI's job).

Tables follow the study's Table 2: systems as rows, buckets as columns with one
sub-column per metric, and a row with each bucket's size.  A last "all" column holds the
scores on the whole test set.
"""
import csv
import io
import json
import math
import textwrap
from typing import Dict, List, Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from .buckets import Bucket  # noqa: E402
from .evaluate import TEST_NAMES, LengthReport  # noqa: E402
from .metrics import DISPLAY_NAMES, METRICS  # noqa: E402

SIGNIFICANCE_LEVEL = 0.05
# Below this many sentences the tables mark no significance: resampling a handful of
# sentences yields tiny p-values that mean nothing (with 2 sentences both sacrebleu tests
# can give p < 0.001).  The p-values stay in the JSON/CSV records.
MIN_SIZE_FOR_MARKS = 30
WHOLE_SET_LABEL = "all"
_LOWER_IS_BETTER = {"ter"}
_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "<": r"\textless{}", ">": r"\textgreater{}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def records(report: LengthReport) -> List[dict]:
    """One flat record per (system, bucket), the whole set last (bucket "all", with both
    bucket_lo and bucket_hi null; an open bucket has only bucket_hi null).  Every metric
    has its columns; those not computed are null."""
    rows = []
    for cell in report.cells:
        row = {
            "system": cell.system,
            "baseline": report.baseline,
            "bucket": _group_label(cell.bucket),
            "bucket_lo": cell.bucket.lo if cell.bucket else None,
            "bucket_hi": cell.bucket.hi if cell.bucket else None,
            "n": cell.n,
            "length_ratio": cell.length_ratio,
            "identical_to_baseline": cell.identical_to_baseline,
        }
        for metric in METRICS:
            result = cell.results.get(metric)
            row[metric] = result.score if result else None
            row[f"{metric}_ci_lo"] = result.ci_lo if result else None
            row[f"{metric}_ci_hi"] = result.ci_hi if result else None
            row[f"{metric}_p"] = result.p_value if result else None
        for metric in METRICS:
            row[f"{metric}_signature"] = report.signatures.get(metric)
        rows.append(row)
    return rows


def json_text(report: LengthReport) -> str:
    return json.dumps(records(report), indent=1, ensure_ascii=False) + "\n"


def csv_text(report: LengthReport) -> str:
    rows = records(report)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def markdown_table(report: LengthReport, title: Optional[str] = None) -> str:
    groups = _groups(report)
    header = ["system"] + [
        f"{_group_label(bucket)} {DISPLAY_NAMES[metric]}"
        for bucket in groups
        for metric in report.metrics
    ]
    align = [":--"] + ["--:"] * (len(header) - 1)
    # the size sits in the bucket's first sub-column
    padding = [""] * (len(report.metrics) - 1)
    sizes = ["*sentences*"]
    sizes += [cell for size in _size_cells(report, "†") for cell in [size] + padding]
    lines = [_markdown_row(header), _markdown_row(align), _markdown_row(sizes)]
    for system in report.systems:
        cells = _score_cells(report, system, groups, "\\*", "=", empty="–")
        lines.append(_markdown_row([_system_label(report, system)] + cells))
    signatures = [
        f"- {DISPLAY_NAMES[metric]}: `{report.signatures[metric]}`" for metric in report.metrics
    ]
    return (
        (f"## {title}\n\n" if title else "")
        + "\n".join(lines) + "\n\n"
        + _note(report, "\\*", "†", "=") + "\n\n"
        + "sacrebleu signatures:\n\n" + "\n".join(signatures) + "\n"
    )


def latex_table(report: LengthReport, title: Optional[str] = None) -> str:
    groups = _groups(report)
    width = len(report.metrics)
    spec = "l" + " ".join("r" * width for _ in groups)
    bucket_header = " & ".join(
        f"\\multicolumn{{{width}}}{{c}}{{{_latex_label(bucket)}}}" for bucket in groups
    )
    rules = " ".join(
        f"\\cmidrule(lr){{{2 + i * width}-{1 + (i + 1) * width}}}" for i in range(len(groups))
    )
    metric_header = " & ".join(DISPLAY_NAMES[metric] for _ in groups for metric in report.metrics)
    sizes = " & ".join(
        f"\\multicolumn{{{width}}}{{c}}{{{size}}}" for size in _size_cells(report, "$^\\dagger$")
    )
    lines = [
        "\\begin{table}[t]",
        "\\centering",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        f" & {bucket_header} \\\\",
        rules,
        f" & {metric_header} \\\\",
        "\\midrule",
        f"\\# sentences & {sizes} \\\\",
        "\\midrule",
    ]
    for system in report.systems:
        cells = _score_cells(report, system, groups, "$^*$", "$^{=}$", empty="--")
        lines.append(f"{_latex_escape(_system_label(report, system))} & {' & '.join(cells)} \\\\")
    caption = _note(report, "$^*$", "$^\\dagger$", "$^{=}$", _latex_escape)
    if title:
        caption = f"{_latex_escape(title)}. {caption}"
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{caption}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


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
        direction = "lower" if metric in _LOWER_IS_BETTER else "higher"
        axis.set_ylabel(f"{DISPLAY_NAMES[metric]} ({direction} is better)")
        axis.set_xlabel("length bucket")
        axis.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize="small")
    if title:
        figure_title(figure, title)
    rendered = {fmt: _figure_bytes(figure, fmt) for fmt in formats}
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
    rendered = _figure_bytes(figure, fmt)
    plt.close(figure)
    return rendered


def _groups(report: LengthReport) -> List[Optional[Bucket]]:
    return list(report.buckets) + [None]


def _group_sizes(report: LengthReport) -> List[int]:
    return list(report.sizes) + [len(report.lengths)]


def _is_thin(size: int) -> bool:
    return 0 < size < MIN_SIZE_FOR_MARKS


def _size_cells(report: LengthReport, thin_marker: str) -> List[str]:
    return [f"{size}{thin_marker if _is_thin(size) else ''}" for size in _group_sizes(report)]


def _group_label(bucket: Optional[Bucket]) -> str:
    return bucket.label if bucket else WHOLE_SET_LABEL


def _system_label(report: LengthReport, system: str) -> str:
    return f"{system} (baseline)" if system == report.baseline else system


def _legend_label(report: LengthReport, system: str) -> str:
    """The system's label, saying so where its line hides under the baseline's."""
    if report.cell(system, None).identical_to_baseline:
        return f"{system} (identical to {report.baseline})"
    return _system_label(report, system)


def _score_cells(report: LengthReport, system: str, groups, marker: str, identical_marker: str,
                 empty: str) -> List[str]:
    """Scores with one decimal; ``marker`` after those significantly different from the
    baseline's in the same bucket, ``identical_marker`` after those of translations that
    are the baseline's, ``empty`` for empty buckets."""
    cells = []
    for bucket in groups:
        cell = report.cell(system, bucket)
        for metric in report.metrics:
            result = cell.results[metric]
            if result.score is None:
                cells.append(empty)
                continue
            if cell.identical_to_baseline:
                cells.append(f"{result.score:.1f}{identical_marker}")
                continue
            significant = (
                result.p_value is not None
                and result.p_value < SIGNIFICANCE_LEVEL
                and not _is_thin(cell.n)
            )
            cells.append(f"{result.score:.1f}{marker if significant else ''}")
    return cells


def _note(report: LengthReport, marker: str, thin_marker: str, identical_marker: str,
          escape=lambda text: text) -> str:
    """What the table's significance ``marker``, small-bucket ``thin_marker`` and
    ``identical_marker`` mean."""
    identical = ""
    if any(cell.identical_to_baseline for cell in report.cells):
        identical = " " + identical_marker + escape(
            f" the same translations as {report.baseline}: no difference to test (p = 1)."
        )
    if not report.has_significance:
        note = escape("No resampling (--bootstrap 0): no confidence intervals or tests.")
        return note + identical
    if report.paired_test == "ar":
        samples = f"{report.ar_trials} trials"
    else:
        samples = f"{report.n_bootstrap} resamples"
    note = marker + escape(
        f" p < {SIGNIFICANCE_LEVEL} against {report.baseline} in the same bucket "
        f"({TEST_NAMES[report.paired_test]}, {samples}, seed {report.seed}; "
        f"not corrected for multiple comparisons)."
    )
    if any(_is_thin(size) for size in report.sizes):
        note += " " + thin_marker + escape(
            f" fewer than {MIN_SIZE_FOR_MARKS} sentences: too few to resample, so no marks "
            "(p-values are in the JSON/CSV output)."
        )
    return note + identical


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _latex_label(bucket: Optional[Bucket]) -> str:
    if bucket is None:
        return WHOLE_SET_LABEL
    upper = r"$\infty$" if bucket.hi is None else bucket.hi
    return f"{bucket.lo}--{upper}"


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)


def _nan_if_none(value: Optional[float]) -> float:
    return math.nan if value is None else value


def _error(upper: Optional[float], lower: Optional[float]) -> float:
    return math.nan if upper is None or lower is None else upper - lower


def figure_title(figure, title: str) -> None:
    """The figure's title, wrapped to the figure's width (matplotlib lets a long one run off
    both edges)."""
    font_points = 1.2 * plt.rcParams["font.size"]  # suptitle's "large"
    characters = int(figure.get_figwidth() * 72 / (0.55 * font_points))
    figure.suptitle(textwrap.fill(title, characters))


def _figure_bytes(figure, fmt: str) -> bytes:
    out = io.BytesIO()
    # No creation date in the PDF, so that the same inputs give the same file.
    metadata = {"CreationDate": None} if fmt == "pdf" else None
    figure.savefig(out, format=fmt, dpi=150, metadata=metadata)
    return out.getvalue()
