"""The leaderboard's outputs, rendered to strings and bytes (writing them is the CLI's job).

One table: a row per system in rank order (the failed ones last, saying why), with the
parameter count, the step time relative to the baseline, BLEU beyond the training limit
(the ranking), then BLEU, TER (and any segment-score metric) and the
hypothesis/reference length ratio per bucket, each as mean ± standard deviation over
seeds.  The table is analysis.tables' model, written by its writers.
"""
from typing import Callable, Dict, List, Optional, Sequence

from . import tables
from .board import Board, BoardCell, BoardRow, Spread
from .buckets import Bucket
from .figures import figure_bytes, figure_title, plt
from .metrics import METRICS, display_decimals, display_name
from .render import (
    MIN_SIZE_FOR_MARKS, SIGNIFICANCE_LEVEL, bucket_fields, is_significant, segment_scores_note,
    size_text,
)
from .tables import (
    DASH, EMPTY, FEW, PLUS_MINUS, SENTENCES, SIGNIFICANT, TIMES, Column, Raw, Table, Text,
)


def records(board: Board) -> List[dict]:
    """One flat record per (system, sentence set): each bucket, then "beyond" (every pair
    longer than the training limit).  Scores have their mean, sd, min, max and the
    per-seed values; a failed system has one record with its failure."""
    rows = []
    for row in board.rows:
        common = {
            "rank": row.rank, "system": row.system, "baseline": board.baseline,
            "seeds": row.seeds, "parameters": row.training.parameters,
            "seconds_per_update": row.training.seconds_per_update,
            "step_time_ratio": row.step_time_ratio, "failure": row.failure,
        }
        groups = list(zip(board.buckets, row.cells)) + ([(board.beyond, row.beyond)] if row.beyond else [])
        if not groups:
            rows.append({**common, "set": None, "bucket": None, "bucket_lo": None,
                         "bucket_hi": None, "n": None})
        for bucket, cell in groups:
            record = {**common, "set": "beyond" if bucket is board.beyond else bucket.label,
                      **bucket_fields(bucket), "n": cell.n}
            for metric in board.metrics:
                record.update(_spread_fields(metric, cell.scores[metric]))
                record[f"{metric}_p"] = cell.p_values[metric]
            record.update(_spread_fields("length_ratio", cell.length_ratio))
            rows.append(record)
    return rows


def json_text(board: Board) -> str:
    return tables.json_text({"baseline": board.baseline, "baseline_failure": board.baseline_failure,
                             "signatures": board.signatures, "records": records(board)})


def csv_text(board: Board) -> str:
    return tables.csv_text(records(board))


def table(board: Board, title: Optional[str] = None) -> Table:
    columns = [Column("rank"), Column("system", align="l"), Column("parameters"),
               Column("step time"), Column(("BLEU ", _label(board.beyond)))]
    columns += [Column(_label(bucket), display_name(metric))
                for metric in board.metrics for bucket in board.buckets]
    columns += [Column(_label(bucket), "length ratio") for bucket in board.buckets]
    bucket_sizes = [size_text(n) for n in board.sizes]
    sizes = ["", SENTENCES, "", "", str(board.beyond_size)]
    sizes += bucket_sizes * (len(board.metrics) + 1)  # each metric's buckets, the length ratio's
    decimals = {metric: display_decimals(metric, [spread.mean for row in board.rows
                                                  for cell in row.cells + [row.beyond] if cell
                                                  for spread in [cell.scores[metric]] if spread])
                for metric in board.metrics}
    rows = [sizes] + [_row_cells(board, row, decimals) for row in board.rows]
    return Table(columns, rows, head_rows=1, title=title, notes=_notes(board),
                 signatures=[(display_name(metric), board.signatures[metric])
                             for metric in board.metrics if metric in METRICS])


def markdown_table(board: Board, title: Optional[str] = None) -> str:
    return tables.markdown(table(board, title))


def latex_table(board: Board, title: Optional[str] = None) -> str:
    return tables.latex(table(board, title))


def curves_plot(board: Board, value: Callable[[BoardCell], Optional[Spread]], ylabel: str,
                mean_lengths: Sequence[float], title: Optional[str] = None,
                reference_line: Optional[float] = None, fmt: str = "png") -> bytes:
    """One curve per system of ``value`` against the bucket's mean length relative to the
    training limit, with a band from the lowest to the highest seed."""
    figure, axis = plt.subplots(figsize=(9, 5), layout="constrained")
    positions = [length / board.train_limit for length in mean_lengths]
    colours = plt.get_cmap("tab10")
    for k, row in enumerate(row for row in board.rows if row.cells):
        spreads = [value(cell) for cell in row.cells]
        points = [(x, s) for x, s in zip(positions, spreads) if s is not None]
        if not points:
            continue
        xs = [x for x, _ in points]
        colour = colours(k % 10)
        style = ("-", "--", ":")[k // 10 % 3]
        axis.plot(xs, [s.mean for _, s in points], style, marker="o", markersize=3,
                  color=colour, linewidth=2.4 if row.system == board.baseline else 1.3,
                  label=f"{row.rank}. {row.system}" if row.rank else row.system)
        axis.fill_between(xs, [s.lo for _, s in points], [s.hi for _, s in points],
                          color=colour, alpha=0.15, linewidth=0)
    axis.axvline(1.0, color="gray", linestyle=":", linewidth=1, label="training limit")
    if reference_line is not None:
        axis.axhline(reference_line, color="gray", linestyle="-", linewidth=0.8)
    axis.set_xlabel(f"mean length of the bucket / training limit ({board.train_limit} tokens)")
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    axis.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
    if title:
        figure_title(figure, title)
    rendered = figure_bytes(figure, fmt)
    plt.close(figure)
    return rendered


def bleu_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    return curves_plot(board, lambda cell: cell.scores["bleu"],
                       "BLEU (mean over seeds; band: lowest to highest seed)", mean_lengths, title)


def length_ratio_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    return curves_plot(board, lambda cell: cell.length_ratio,
                       "hypothesis / reference length (mean over seeds)", mean_lengths, title,
                       reference_line=1.0)


def _label(bucket: Bucket) -> Text:
    return Raw(bucket.label, bucket.latex_label)


def _row_cells(board: Board, row: BoardRow, decimals: Dict[str, int]) -> List[Text]:
    parameters = f"{row.training.parameters:,}" if row.training.parameters else EMPTY
    step = (f"{row.step_time_ratio:.2f}", TIMES) if row.step_time_ratio else EMPTY
    name: Text = row.system + (" (baseline)" if row.system == board.baseline else "")
    if row.failure:
        name = (name, DASH, f"{'failed' if not row.cells else 'some seeds failed'}: {row.failure}")
    cells = [str(row.rank) if row.rank else EMPTY, name, parameters, step]
    if not row.cells:
        return cells + [EMPTY] * (1 + (len(board.metrics) + 1) * len(board.buckets))
    beyond = row.beyond
    cells.append(_score(beyond.scores["bleu"], beyond.p_values["bleu"], beyond.n, 1))
    for metric in board.metrics:
        cells += [_score(cell.scores[metric], cell.p_values[metric], cell.n, decimals[metric])
                  for cell in row.cells]
    cells += [_score(cell.length_ratio, None, cell.n, 2) for cell in row.cells]
    return cells


def _score(value: Optional[Spread], p_value: Optional[float], n: int, digits: int) -> Text:
    if value is None:
        return EMPTY
    text: tuple = (f"{value.mean:.{digits}f}",)
    if len(value.values) > 1:
        text += (PLUS_MINUS, f"{value.sd:.{digits}f}")
    return text + (SIGNIFICANT,) if is_significant(p_value, n) else text


def _notes(board: Board) -> List[Text]:
    seeds = sorted({row.seeds for row in board.rows if row.seeds})
    seed_text = " or ".join(str(s) for s in seeds) or "no"
    note: List[Text] = [
        "Mean", PLUS_MINUS, f"sample standard deviation over {seed_text} training seeds (each "
        "seed's corpus score; per-seed values, minimum and maximum in the JSON/CSV output). "
        f"Ranked by BLEU on every pair longer than the training limit of {board.train_limit} "
        "tokens (", _label(board.beyond), "). "]
    if board.baseline_failure is not None:
        note.append(f"The baseline, {board.baseline}, has no translations "
                    f"({board.baseline_failure}): no paired tests. ")
    elif board.n_bootstrap:
        note += [SIGNIFICANT, f" p < {SIGNIFICANCE_LEVEL} against {board.baseline} in the same "
                 f"bucket: paired bootstrap resampling ({board.n_bootstrap} resamples, seed "
                 f"{board.seed}) of the seeds pooled, seed k of each system paired with seed k of "
                 "the baseline; not corrected for multiple comparisons. ", FEW,
                 f" fewer than {MIN_SIZE_FOR_MARKS} sentences: no marks. "]
    note.append(f"Step time: median seconds per training update relative to {board.baseline}.")
    return [tuple(note)] + segment_scores_note(board.metrics)


def _spread_fields(name: str, value: Optional[Spread]) -> Dict[str, object]:
    if value is None:
        return {name: None, f"{name}_sd": None, f"{name}_min": None, f"{name}_max": None,
                f"{name}_seeds": None}
    return {name: value.mean, f"{name}_sd": value.sd, f"{name}_min": value.lo,
            f"{name}_max": value.hi, f"{name}_seeds": list(value.values)}
