"""The band matrix: length as a domain (Variš and Bojar 2021).  A scheme is trained once per
length band (the training pairs of lengths LO..HI only), and each of its systems translates a
test set that spans every band; each system's translations are scored on each test band.
Rows are the bands trained on, columns the bands tested on, and a cell is a score with its
95% bootstrap interval; where a column's band was also trained on, that system (the
diagonal) is what the column's other systems are tested against (paired bootstrap, or
approximate randomization), so that a fall on either side of the diagonal is a measured one.

- ``band_matrix``: one scheme's matrix from lists (each sentence's length, the references,
  each train band's translations): a pure function, scored by relpos_analysis.evaluate;
- ``band_tables``, ``records``: the tables.Table model (a table per scheme and metric) and the
  flat records of the CSV and JSON;
- ``heatmap``: BLEU of each scheme as a heatmap, a panel per scheme, the diagonal outlined.

``python -m relpos_analysis.bands`` is the command line (docs/analysis.md).
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import tables
from .buckets import Bucket
from .evaluate import MetricResult, ScoringOptions, evaluate_by_length
from .failures import FAILURES, LOG_PROB
from .figures import figure_bytes, figure_title, plt
from .metrics import display_decimals, display_name, sentence_statistics
from .render import is_significant, is_thin, failure_note
from .tables import EMPTY, FEW, SENTENCES, SIGNIFICANT, Raw, Table, Text

DIAGONAL = (Raw("**", "\\textbf{"), Raw("**", "}"))  # a cell of the band a system was trained on


@dataclass
class BandMatrix:
    """One scheme: ``cells[row, column][metric]`` is the system trained on ``train_bands[row]``
    scored on the sentences of ``test_bands[column]`` (``sizes[column]`` of them); its p-value
    and difference interval are against the column's diagonal system, where there is one."""

    scheme: str
    train_bands: List[Bucket]
    test_bands: List[Bucket]
    sizes: List[int]
    metrics: List[str]
    signatures: Dict[str, str]
    n_bootstrap: int
    cells: Dict[Tuple[int, int], Dict[str, MetricResult]] = field(default_factory=dict)

    def diagonal(self, column: int) -> Optional[int]:
        """The row trained on the column's band, if any."""
        return next((row for row, band in enumerate(self.train_bands) if band == self.test_bands[column]), None)


def band_label(band: Bucket) -> str:
    return f"{band.lo}–{band.hi}"


def band_text(band: Bucket) -> Text:
    return Raw(band_label(band), f"{band.lo}--{band.hi}")


def band_matrix(scheme: str, lengths: Sequence[int], references: Sequence[Sequence[str]],
                hypotheses: Sequence[Sequence[str]], train_bands: Sequence[Bucket], test_bands: Sequence[Bucket],
                options: ScoringOptions = ScoringOptions(),
                log_probs: Optional[Sequence[Sequence[float]]] = None) -> BandMatrix:
    """``scheme``'s matrix: ``hypotheses[row]`` are the translations of the system trained on
    ``train_bands[row]``, ``lengths`` each sentence's length (that the bands measure),
    ``references`` one stream per reference; ``log_probs[row]`` each translation's mean
    log2-probability per token (the failure column), or None."""
    if len(hypotheses) != len(train_bands) or (log_probs is not None and len(log_probs) != len(train_bands)):
        raise ValueError(f"{scheme}: {len(train_bands)} train bands, {len(hypotheses)} sets of translations")
    names = [band_label(band) for band in train_bands]
    systems = dict(zip(names, hypotheses))
    # the sentence statistics once; each column is scored on its band's sentences alone (its
    # resampling costs what the band holds, not the whole test set)
    statistics = sentence_statistics(options.metric_configs(), references, systems, options.workers, options.cache)
    matrix = BandMatrix(scheme, list(train_bands), list(test_bands), [], [], {}, options.n_bootstrap)
    for column, band in enumerate(test_bands):
        members = [k for k, length in enumerate(lengths) if band.contains(length)]

        def subset(values):
            return [values[k] for k in members]

        diagonal = matrix.diagonal(column)
        report = evaluate_by_length(
            subset(lengths), [subset(stream) for stream in references],
            {name: subset(hyps) for name, hyps in systems.items()}, [band], options,
            baseline=names[0 if diagonal is None else diagonal],
            log_probs=None if log_probs is None else {name: subset(probs) for name, probs in zip(names, log_probs)},
            statistics={metric: {name: rows[members] for name, rows in by_system.items()}
                        for metric, by_system in statistics.items()})
        matrix.metrics, matrix.signatures = report.all_metrics, report.signatures
        matrix.sizes.append(len(members))
        for row, name in enumerate(names):
            results = report.cell(name, band).results
            if diagonal is None:  # no system of this band: nothing to test against
                results = {metric: MetricResult(r.score, r.ci_lo, r.ci_hi) for metric, r in results.items()}
            matrix.cells[row, column] = dict(results)
    return matrix


# ----------------------------------------------------------------------------------------
# tables and records
# ----------------------------------------------------------------------------------------
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
