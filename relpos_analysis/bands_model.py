"""The band matrix: length as a domain (Variš and Bojar 2021).  A scheme is trained once per
length band (the training pairs of lengths LO..HI only), and each of its systems translates a
test set that spans every band; each system's translations are scored on each test band.
Rows are the bands trained on, columns the bands tested on, and a cell is a score with its
95% bootstrap interval; where a column's band was also trained on, that system (the
diagonal) is what the column's other systems are tested against (paired bootstrap, or
approximate randomization), so that a fall on either side of the diagonal is a measured one.

``band_matrix``: one scheme's matrix from lists (each sentence's length, the references, each
train band's translations), a pure function scored by relpos_analysis.report_model; its tables,
records and heatmap are relpos_analysis.bands_render's, and ``python -m relpos_analysis.bands``
the command line (docs/analysis.md).
"""
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .buckets import Bucket
from .report_model import MetricResult, ScoringOptions, evaluate_by_length
from .metrics import sentence_statistics
from .tables import Raw, Text


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
