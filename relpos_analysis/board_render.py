"""The leaderboard's outputs, rendered to strings and bytes (writing them is the CLI's job).

Up to three tables, relpos_analysis.tables' model, written by its writers:

- the board: a row per system in rank order (then those that did not learn the task, then
  the failed ones, saying why), with its learning rate, the updates its trainings took, the
  parameter count, the step time relative to the baseline, BLEU within and beyond the
  training limit (the ranking), the retention (beyond / within) and the difference to the
  baseline beyond the limit with its 95% interval;
- with a learning-rate selection (relpos_analysis.tuning), the selection: a row per scheme, a
  column per rate of the grid;
- per length bucket: BLEU, TER (and any segment-score metric) and the hypothesis/reference
  length ratio of every bucket.

Scores are mean ± standard deviation over seeds.  JSON and CSV hold flat records (and the
JSON the selection too; the CSV leaves it out: it is no record per system and set).
"""
from typing import Callable, Dict, List, Optional, Sequence

from . import tables
from .board import Board, BoardCell, BoardRow, Difference, Spread
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
from .tuning import Tuning

BOLD = (Raw("**", "\\textbf{"), Raw("**", "}"))
DELTA = Raw("Δ", "$\\Delta$")


def records(board: Board) -> List[dict]:
    """One flat record per (system, sentence set): each bucket, then "within" and "beyond"
    (every pair within, and longer than, the training limit).  Scores have their mean, sd,
    min, max and the per-seed values, and their difference to the baseline (seeds pooled)
    with its 95% interval; a failed system has one record with its failure."""
    rows = []
    for row in board.rows:
        common = {
            "rank": row.rank, "system": row.system, "baseline": board.baseline,
            "seeds": row.seeds, "learned": row.learned, "parameters": row.training.parameters,
            "seconds_per_update": row.training.seconds_per_update,
            "step_time_ratio": row.step_time_ratio,
            "learning_rate": list(row.training.learning_rate) if row.training.learning_rate else None,
            **_spread_fields("updates", row.training.updates),
            **_spread_fields("retention", row.retention),
            "failure": row.failure,
        }
        sets = [(bucket.label, bucket, cell) for bucket, cell in zip(board.buckets, row.cells)]
        if row.cells:
            sets += [("within", board.within, row.within), ("beyond", board.beyond, row.beyond)]
        if not sets:
            rows.append({**common, "set": None, "bucket": None, "bucket_lo": None,
                         "bucket_hi": None, "n": None})
        for name, bucket, cell in sets:
            record = {**common, "set": name, **bucket_fields(bucket), "n": cell.n}
            for metric in board.metrics:
                record.update(_spread_fields(metric, cell.scores[metric]))
                record[f"{metric}_p"] = cell.p_values[metric]
                record.update(_difference_fields(metric, cell.differences[metric]))
            record.update(_spread_fields("length_ratio", cell.length_ratio))
            rows.append(record)
    return rows


def json_text(board: Board, tuning: Optional[Tuning] = None) -> str:
    return tables.json_text({"baseline": board.baseline, "baseline_failure": board.baseline_failure,
                             "learned_threshold": board.learned_threshold,
                             "tuning": tuning.as_json() if tuning else None,
                             "signatures": board.signatures, "records": records(board)})


def csv_text(board: Board) -> str:
    return tables.csv_text(records(board))


def board_tables(board: Board, title: Optional[str] = None,
                 tuning: Optional[Tuning] = None) -> List[Table]:
    """The board, the learning-rate selection (given ``tuning``), the scores per bucket."""
    selection = [tuning_table(tuning, [row.system for row in board.rows])] if tuning else []
    return [ranking_table(board, title, tuning)] + selection + [bucket_table(board)]


def ranking_table(board: Board, title: Optional[str] = None, tuning: Optional[Tuning] = None) -> Table:
    columns = [Column("rank"), Column("system", align="l"),
               Column("chosen lr" if tuning else "lr"), Column("updates"), Column("parameters"),
               Column("step time"), Column(("BLEU ", _label(board.within))),
               Column(("BLEU ", _label(board.beyond))), Column("retention"),
               Column((DELTA, " BLEU ", _label(board.beyond), " [95% CI]"))]
    sizes = ["", SENTENCES, "", "", "", "", size_text(board.within_size),
             size_text(board.beyond_size), "", ""]
    rows = [sizes] + [_ranking_cells(board, row) for row in board.rows]
    return Table(columns, rows, head_rows=1, title=title, notes=_notes(board, tuning),
                 signatures=[(display_name(metric), board.signatures[metric])
                             for metric in board.metrics if metric in METRICS])


def bucket_table(board: Board) -> Table:
    columns = [Column("rank"), Column("system", align="l")]
    columns += [Column(_label(bucket), display_name(metric))
                for metric in board.metrics for bucket in board.buckets]
    columns += [Column(_label(bucket), "length ratio") for bucket in board.buckets]
    sizes = ["", SENTENCES] + [size_text(n) for n in board.sizes] * (len(board.metrics) + 1)
    decimals = {metric: display_decimals(metric, [spread.mean for row in board.rows
                                                  for cell in row.cells
                                                  for spread in [cell.scores[metric]] if spread])
                for metric in board.metrics}
    rows = [sizes] + [_bucket_cells(board, row, decimals) for row in board.rows]
    notes: List[Text] = [
        ("Each bucket's scores and hypothesis/reference length ratio, as mean", PLUS_MINUS,
         "sample standard deviation over seeds; marks as in the board above.")]
    return Table(columns, rows, head_rows=1, title="Per length bucket",
                 notes=notes + segment_scores_note(board.metrics))


def tuning_table(tuning: Tuning, order: Sequence[str] = ()) -> Table:
    """A row per scheme, those named in ``order`` first (the board's), in that order."""
    rates = tuning.rates()
    columns = [Column("scheme", align="l")] + [Column(("lr ", rate)) for rate in rates] + [Column("chosen")]
    rows: List[List[Text]] = []
    failures: List[str] = []
    schemes = [name for name in order if name in tuning.schemes]
    schemes += [name for name in tuning.schemes if name not in schemes]
    for scheme in schemes:
        selection = tuning.schemes[scheme]
        cells: List[Text] = [scheme]
        for rate in rates:
            point = tuning.point(scheme, rate)
            if point is None:
                cells.append(EMPTY)
                continue
            if point.failure is not None:
                failures.append(f"{scheme} at {rate}: {point.failure}")
            text = "failed" if point.dev_loss is None else f"{point.dev_loss:.3f}"
            text += f" ({point.updates:,})" if point.updates is not None else ""
            chosen = selection.chosen is not None and float(selection.chosen) == float(rate)
            cells.append((BOLD[0], text, BOLD[1]) if chosen else text)
        rows.append(cells + [selection.chosen or "none: every rate failed"])
    notes: List[Text] = [
        f"A cell: the {tuning.metric} of the training at that rate, and in parentheses the "
        "updates it took; in bold the rate chosen, the one with the lowest loss. The test sets "
        "took no part in the choice."]
    edges = tuning.at_edge()
    if edges:
        notes.append("At the edge of the grid: " + ", ".join(
            f"{name} (its {edges[name]} rate)" for name in schemes if name in edges)
            + ". The best rate may lie beyond it: a grid reaching further would tell.")
    if failures:
        notes.append("Failed: " + "; ".join(failures) + ".")
    return Table(columns, rows, title=f"Learning rate chosen on {tuning.metric}", notes=notes)


def markdown_table(board: Board, title: Optional[str] = None, tuning: Optional[Tuning] = None) -> str:
    return "\n".join(tables.markdown(table) for table in board_tables(board, title, tuning))


def latex_table(board: Board, title: Optional[str] = None, tuning: Optional[Tuning] = None) -> str:
    return "\n".join(tables.latex(table) for table in board_tables(board, title, tuning))


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
                  label=_legend_label(row))
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


def _legend_label(row: BoardRow) -> str:
    if row.rank:
        return f"{row.rank}. {row.system}"
    return row.system + (" (did not learn)" if row.learned is False else "")


def _label(bucket: Bucket) -> Text:
    return Raw(bucket.label, bucket.latex_label)


def _system_cell(board: Board, row: BoardRow, remarks: bool) -> Text:
    """The system's name, and with ``remarks`` why it is not ranked or not complete."""
    name = row.system + (" (baseline)" if row.system == board.baseline else "")
    why = ["did not learn"] if row.learned is False else []
    if row.failure:
        why.append(f"{'failed' if not row.cells else 'some seeds failed'}: {row.failure}")
    return (name, DASH, "; ".join(why)) if remarks and why else name


def _ranking_cells(board: Board, row: BoardRow) -> List[Text]:
    training = row.training
    rate = ",".join(map(rate_text, training.learning_rate)) if training.learning_rate else EMPTY
    parameters = f"{training.parameters:,}" if training.parameters else EMPTY
    step = (f"{row.step_time_ratio:.2f}", TIMES) if row.step_time_ratio else EMPTY
    cells = [str(row.rank) if row.rank else EMPTY, _system_cell(board, row, remarks=True), rate,
             _count(training.updates), parameters, step]
    if not row.cells:
        return cells + [EMPTY] * 4
    within, beyond = row.within, row.beyond
    return cells + [_score(within.scores["bleu"], within.p_values["bleu"], within.n, 1),
                    _score(beyond.scores["bleu"], beyond.p_values["bleu"], beyond.n, 1),
                    _score(row.retention, None, beyond.n, 2),
                    _difference(beyond.differences["bleu"])]


def _bucket_cells(board: Board, row: BoardRow, decimals: Dict[str, int]) -> List[Text]:
    cells = [str(row.rank) if row.rank else EMPTY, _system_cell(board, row, remarks=False)]
    if not row.cells:
        return cells + [EMPTY] * ((len(board.metrics) + 1) * len(board.buckets))
    for metric in board.metrics:
        cells += [_score(cell.scores[metric], cell.p_values[metric], cell.n, decimals[metric])
                  for cell in row.cells]
    return cells + [_score(cell.length_ratio, None, cell.n, 2) for cell in row.cells]


def rate_text(rate: float) -> str:
    """A learning rate as rates are written: 0.003 -> "3e-3", 0.0005 -> "5e-4"."""
    mantissa, exponent = f"{rate:e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _count(value: Optional[Spread]) -> Text:
    if value is None:
        return EMPTY
    text = f"{value.mean:,.0f}"
    return (text, PLUS_MINUS, f"{value.sd:,.0f}") if len(value.values) > 1 else text


def _difference(value: Optional[Difference]) -> Text:
    if value is None:
        return EMPTY
    text = f"{value.value:+.1f}"
    return text if value.ci_lo is None else f"{text} [{value.ci_lo:+.1f}, {value.ci_hi:+.1f}]"


def _score(value: Optional[Spread], p_value: Optional[float], n: int, digits: int) -> Text:
    if value is None:
        return EMPTY
    text: tuple = (f"{value.mean:.{digits}f}",)
    if len(value.values) > 1:
        text += (PLUS_MINUS, f"{value.sd:.{digits}f}")
    return text + (SIGNIFICANT,) if is_significant(p_value, n) else text


def _notes(board: Board, tuning: Optional[Tuning]) -> List[Text]:
    seeds = sorted({row.seeds for row in board.rows if row.seeds})
    seed_text = " or ".join(str(s) for s in seeds) or "no"
    scores: List[Text] = [
        "Mean", PLUS_MINUS, f"sample standard deviation over {seed_text} training seeds (each "
        "seed's corpus score; per-seed values, minimum and maximum in the JSON/CSV output). "
        f"Ranked by BLEU on every pair longer than the training limit of {board.train_limit} "
        "tokens (", _label(board.beyond), ")"]
    if board.learned_threshold > 0 and board.within_size:
        scores += [f", among the systems that learned the task: a mean BLEU of at least "
                   f"{board.learned_threshold:g} within the limit (", _label(board.within), "). A "
                   "system below it did not learn the task and is listed after the ranked ones, "
                   "unranked: its BLEU beyond the limit would measure how far its training got, "
                   "not how it extrapolates."]
    elif board.learned_threshold > 0:
        scores.append(". No pair is within the training limit: whether a system learned the "
                      "task is not judged on these sentences.")
    else:
        scores.append(".")
    notes = [tuple(scores)]
    if board.baseline_failure is not None:
        notes.append(f"The baseline, {board.baseline}, has no translations "
                     f"({board.baseline_failure}): no paired tests.")
    elif board.n_bootstrap:
        notes.append((
            SIGNIFICANT, f" p < {SIGNIFICANCE_LEVEL} against {board.baseline} in the same bucket: "
            f"paired bootstrap resampling ({board.n_bootstrap} resamples, seed {board.seed}) of "
            "the seeds pooled, seed k of each system paired with seed k of the baseline; not "
            "corrected for multiple comparisons. ", FEW, f" fewer than {MIN_SIZE_FOR_MARKS} "
            "sentences: no marks. ", DELTA, f": BLEU beyond the limit minus {board.baseline}'s, "
            "each on its seeds pooled, with the 95% interval of the same resamples."))
    chosen = (f"Chosen lr: the learning rate chosen per scheme on {tuning.metric}, never on the "
              "test sets (the selection is the next table)." if tuning
              else "lr: the learning rate of the training logs.")
    notes.append(f"{chosen} Updates: those each seed's training took (fairseq's last "
                 "num_updates). Retention: BLEU beyond the limit over BLEU within it, per seed. "
                 f"Step time: median seconds per training update relative to {board.baseline}.")
    return notes


def _difference_fields(metric: str, value: Optional[Difference]) -> Dict[str, object]:
    return {f"{metric}_diff": value.value if value else None,
            f"{metric}_diff_ci_lo": value.ci_lo if value else None,
            f"{metric}_diff_ci_hi": value.ci_hi if value else None}


def _spread_fields(name: str, value: Optional[Spread]) -> Dict[str, object]:
    if value is None:
        return {name: None, f"{name}_sd": None, f"{name}_min": None, f"{name}_max": None,
                f"{name}_seeds": None}
    return {name: value.mean, f"{name}_sd": value.sd, f"{name}_min": value.lo,
            f"{name}_max": value.hi, f"{name}_seeds": list(value.values)}
