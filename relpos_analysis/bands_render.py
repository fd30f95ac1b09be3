"""The band matrix's renderer (relpos_analysis.bands_model is the model): the tables.Table
model (a table per scheme and metric, ``band_tables``), the flat records of the CSV and JSON
(``records``), the Markdown, LaTeX, JSON and CSV texts, and ``heatmap``: a metric of each
scheme as a heatmap, a panel per scheme, the diagonal outlined.
"""
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import tables
from .bands_model import BandMatrix, band_label, band_text
from .report_model import MetricResult
from .failures import FAILURES, LOG_PROB
from .figures import figure_bytes, figure_title, plt
from .metrics import display_decimals, display_name
from .report_render import is_significant, is_thin, failure_note
from .tables import EMPTY, FEW, SENTENCES, SIGNIFICANT, Raw, Table, Text

DIAGONAL = (Raw("**", "\\textbf{"), Raw("**", "}"))  # a cell of the band a system was trained on


def band_tables(matrices: Sequence[BandMatrix], title: Optional[str] = None) -> List[Table]:
    """A table per scheme and metric: the train bands as rows, the test bands as columns under
    a row of their sizes; the diagonal in bold, a score significantly different from the
    diagonal's in its column marked."""
    found = []
    for matrix in matrices:
        for metric in matrix.metrics:
            found.append(_metric_table(matrix, metric, title))
    return found


def _metric_table(matrix: BandMatrix, metric: str, title: Optional[str]) -> Table:
    scores = [results[metric].score for results in matrix.cells.values()]
    decimals = 2 if metric == LOG_PROB else display_decimals(metric, scores)
    columns = [tables.Column("trained on", align="l")] + [
        tables.Column(band_text(band), group="tested on") for band in matrix.test_bands]
    rows: List[List[Text]] = [[SENTENCES] + [(str(n), FEW) if is_thin(n) else str(n) for n in matrix.sizes]]
    for row, band in enumerate(matrix.train_bands):
        cells = [band_text(band)]
        for column, size in enumerate(matrix.sizes):
            cells.append(_cell_text(matrix.cells[row, column][metric], decimals, size,
                                    diagonal=matrix.diagonal(column) == row))
        rows.append(cells)
    heading = f"{matrix.scheme}, {display_name(metric)}"
    return Table(columns, rows, head_rows=1, title=f"{title}: {heading}" if title else heading,
                 notes=_notes(matrix, metric), signatures=[(display_name(metric), matrix.signatures[metric])])


def _cell_text(result: MetricResult, decimals: int, size: int, diagonal: bool) -> Text:
    if result.score is None:
        return EMPTY
    text: Text = f"{result.score:.{decimals}f}"
    if result.ci_lo is not None:
        text = f"{text} [{result.ci_lo:.{decimals}f}, {result.ci_hi:.{decimals}f}]"
    if diagonal:
        return (DIAGONAL[0], text, DIAGONAL[1])
    return (text, SIGNIFICANT) if is_significant(result.p_value, size) else text


def _notes(matrix: BandMatrix, metric: str) -> List[Text]:
    what = ("Rows: the band of lengths the system was trained on; columns: the band of the test sentences, of the "
            "same length (both ends included). In bold the band a system was trained on (the diagonal)")
    notes: List[Text] = [(what, f"; in brackets the 95% bootstrap interval ({matrix.n_bootstrap} resamples); ",
                          SIGNIFICANT, " a score that differs significantly (p < 0.05) from the diagonal's in its "
                                       "column (paired test on the same sentences).")
                         if matrix.n_bootstrap else what + "."]
    if any(is_thin(n) for n in matrix.sizes):
        notes.append((FEW, " a test band of fewer than 30 sentences: no significance marks."))
    if metric in (*FAILURES, LOG_PROB):
        notes.append(failure_note([metric], matrix.signatures))
    return notes


def records(matrices: Sequence[BandMatrix]) -> List[dict]:
    """One flat record per (scheme, train band, test band, metric)."""
    found = []
    for matrix in matrices:
        for (row, column), results in matrix.cells.items():
            train, test = matrix.train_bands[row], matrix.test_bands[column]
            for metric, result in results.items():
                found.append({
                    "scheme": matrix.scheme, "train_band": f"{train.lo}:{train.hi}", "test_band": f"{test.lo}:{test.hi}",
                    "diagonal": matrix.diagonal(column) == row, "n": matrix.sizes[column], "metric": metric,
                    "score": result.score, "ci_lo": result.ci_lo, "ci_hi": result.ci_hi,
                    "p_value_vs_diagonal": result.p_value, "difference_vs_diagonal_ci_lo": result.difference_ci_lo,
                    "difference_vs_diagonal_ci_hi": result.difference_ci_hi})
    return found


def markdown(matrices: Sequence[BandMatrix], title: Optional[str] = None) -> str:
    return "\n".join(tables.markdown(table) for table in band_tables(matrices, title))


def latex(matrices: Sequence[BandMatrix], title: Optional[str] = None) -> str:
    return "\n".join(tables.latex(table) for table in band_tables(matrices, title))


def json_text(matrices: Sequence[BandMatrix], title: Optional[str] = None) -> str:
    signatures = {metric: signature for matrix in matrices for metric, signature in matrix.signatures.items()}
    return tables.json_text({"title": title, "signatures": signatures, "records": records(matrices)})


def csv_text(matrices: Sequence[BandMatrix]) -> str:
    return tables.csv_text(records(matrices))


# ----------------------------------------------------------------------------------------
# the heatmap
# ----------------------------------------------------------------------------------------
def heatmap(matrices: Sequence[BandMatrix], metric: str = "bleu", title: Optional[str] = None,
            formats: Sequence[str] = ("png", "pdf")) -> Dict[str, bytes]:
    """A panel per scheme: ``metric`` of each train band (rows) on each test band (columns),
    the value in each cell, the diagonal outlined; one colour scale for every panel."""
    values = [np.array([[_nan(matrix.cells[row, column][metric].score) for column in range(len(matrix.test_bands))]
                        for row in range(len(matrix.train_bands))]) for matrix in matrices]
    finite = [v for grid in values for v in grid.ravel() if np.isfinite(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    width = max(len(matrix.test_bands) for matrix in matrices)
    height = max(len(matrix.train_bands) for matrix in matrices)
    figure, axes = plt.subplots(1, len(matrices), squeeze=False, layout="constrained",
                                figsize=(2.0 + len(matrices) * (0.8 * width + 1.2), 2.2 + 0.5 * height))
    image = None
    for axis, matrix, grid in zip(axes[0], matrices, values):
        image = axis.imshow(grid, cmap="viridis", vmin=low, vmax=high, aspect="auto")
        for (row, column), value in np.ndenumerate(grid):
            if np.isfinite(value):
                axis.text(column, row, f"{value:.{display_decimals(metric, [value])}f}", ha="center", va="center",
                          color="white" if value < (low + high) / 2 else "black", fontsize=8)
        for column in range(len(matrix.test_bands)):
            row = matrix.diagonal(column)
            if row is not None:
                axis.add_patch(plt.Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red",
                                             linewidth=2))
        axis.set_xticks(range(len(matrix.test_bands)), [band_label(b) for b in matrix.test_bands], fontsize=8)
        axis.set_yticks(range(len(matrix.train_bands)), [band_label(b) for b in matrix.train_bands], fontsize=8)
        axis.set_xlabel("tested on", fontsize=9)
        axis.set_title(matrix.scheme, fontsize=9)
    axes[0][0].set_ylabel("trained on", fontsize=9)
    figure.colorbar(image, ax=axes[0].tolist(), label=display_name(metric) + " (red: the trained band)")
    figure_title(figure, title or f"{display_name(metric)} by train band and test band")
    rendered = {fmt: figure_bytes(figure, fmt) for fmt in formats}
    plt.close(figure)
    return rendered


def _nan(value: Optional[float]) -> float:
    return float("nan") if value is None else value
