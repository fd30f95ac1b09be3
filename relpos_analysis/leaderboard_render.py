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
from .leaderboard_model import Board, BoardCell, BoardRow, Difference, Spread
from .buckets import Bucket
from .figures import figure_bytes, figure_title, panel_grid, plt
from .metrics import METRICS, display_decimals, display_name
from .failures import FAILURES
from .report_render import (
    MIN_SIZE_FOR_MARKS, SIGNIFICANCE_LEVEL, bucket_fields, change_fields, change_text, failure_note,
    is_significant, segment_scores_note, size_text, stacked_failures,
)
from .tables import (
    DASH, DELTA, EMPTY, FEW, MINUS, PLUS_MINUS, SENTENCES, SIGNIFICANT, TIMES, Column, Raw, Table, Text,
)
from .tuning import Tuning

BOLD = (Raw("**", "\\textbf{"), Raw("**", "}"))


def records(board: Board) -> List[dict]:
    """One flat record per (system, sentence set): each bucket, then "within" and "beyond"
    (every pair within, and longer than, the training limit).  Scores and failure columns
    have their mean, sd, min, max and the per-seed values, and their difference to the
    baseline (seeds pooled) with its 95% interval; a bucket beyond the limit has each
    metric's drop from within it (``METRIC_drop``), an oracle-length system's bucket each
    metric's gain over the free decoding (``METRIC_oracle_gain``), both on the seeds pooled
    with their intervals; a failed system has one record with its failure."""
    rows = []
    metrics = board.metrics + board.failure_metrics
    beyond_buckets = board.beyond_buckets()
    for row in board.rows:
        common = {
            "rank": row.rank, "system": row.system, "baseline": board.baseline,
            "seeds": row.seeds, "learned": row.learned, "oracle_of": row.oracle_of,
            "own_buckets": board.buckets_per_system, "parameters": row.training.parameters,
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
            record = {**common, "set": name, **bucket_fields(bucket), "n": cell.n,
                      "n_seeds": list(cell.seed_sizes)}
            is_bucket = name == bucket.label
            for metric in metrics:
                record.update(_spread_fields(metric, cell.scores[metric]))
                record[f"{metric}_p"] = cell.p_values[metric]
                record.update(change_fields(f"{metric}_diff", cell.differences[metric]))
                if beyond_buckets:
                    record.update(change_fields(f"{metric}_drop", row.drops.get(bucket, {}).get(metric)
                                                if is_bucket else None))
                if board.oracles:
                    record.update(change_fields(f"{metric}_oracle_gain",
                                                row.oracle_gains.get(bucket, {}).get(metric) if is_bucket else None,
                                                with_p=True))
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
    """The board, the learning-rate selection (given ``tuning``), the scores per bucket, the
    failures per bucket, the drop beyond the limit and, given oracle-length decodings, free
    against oracle-length decoding."""
    selection = [tuning_table(tuning, [row.system for row in board.rows])] if tuning else []
    result = [ranking_table(board, title, tuning)] + selection + [bucket_table(board), failure_table(board)]
    if board.beyond_buckets():
        result.append(drop_table(board))
    if board.oracles:
        result.append(oracle_table(board))
    return result


def ranking_table(board: Board, title: Optional[str] = None, tuning: Optional[Tuning] = None) -> Table:
    ranked = display_name(board.rank_metric)
    columns = [Column("rank"), Column("system", align="l"),
               Column("chosen lr" if tuning else "lr"), Column("updates"), Column("parameters"),
               Column("step time"), Column((ranked, " ", _label(board.within))),
               Column((ranked, " ", _label(board.beyond))), Column("retention"),
               Column((DELTA, " ", ranked, " ", _label(board.beyond), " [95% CI]"))]
    sizes = ["", SENTENCES, "", "", "", "", size_text(board.within_size),
             size_text(board.beyond_size), "", ""]
    rows = [sizes] + [_ranking_cells(board, row) for row in board.rows]
    return Table(columns, rows, head_rows=1, title=title, notes=_notes(board, tuning),
                 signatures=[(display_name(metric), board.signatures[metric])
                             for metric in board.metrics if metric in METRICS])


def bucket_table(board: Board) -> Table:
    notes: List[Text] = [
        ("Each bucket's scores and hypothesis/reference length ratio, as mean", PLUS_MINUS,
         "sample standard deviation over seeds; marks as in the board above.")]
    if board.buckets_per_system:
        notes.append(OWN_BUCKETS_NOTE)
    return _bucket_metrics_table(board, board.metrics, "Per length bucket", notes + segment_scores_note(board.metrics),
                                 with_ratio=True)


def failure_table(board: Board) -> Table:
    return _bucket_metrics_table(board, board.failure_metrics, "Failures per length bucket",
                                 [(failure_note(board.failure_metrics, board.signatures), " Mean", PLUS_MINUS,
                                   "sample standard deviation over seeds.")])


OWN_BUCKETS_NOTE = ("Buckets by each translation's own length: each system (and seed) has its own, so two "
                    "systems' buckets hold different sentences and have no paired test; the sizes are the first "
                    "system's first seed's (each record has its own, per seed: n_seeds).")


def _bucket_metrics_table(board: Board, metrics: Sequence[str], title: str, notes: List[Text],
                          with_ratio: bool = False) -> Table:
    """A row per system, a column per metric and bucket (and the length ratio's)."""
    columns = [Column("rank"), Column("system", align="l")]
    columns += [Column(_label(bucket), display_name(metric)) for metric in metrics for bucket in board.buckets]
    if with_ratio:
        columns += [Column(_label(bucket), "length ratio") for bucket in board.buckets]
    groups = len(metrics) + with_ratio
    sizes = ["", SENTENCES] + [size_text(n) for n in board.sizes] * groups
    decimals = {metric: display_decimals(metric, [spread.mean for row in board.rows
                                                  for cell in row.cells
                                                  for spread in [cell.scores[metric]] if spread])
                for metric in metrics}
    rows = [sizes] + [_bucket_cells(board, row, metrics, decimals, with_ratio) for row in board.rows]
    return Table(columns, rows, head_rows=1, title=title, notes=notes)


def drop_table(board: Board) -> Table:
    """Per system, each score of every bucket beyond the training limit minus its score
    within it, on its seeds pooled, with the 95% interval."""
    beyond = board.beyond_buckets()
    columns = [Column("system", align="l")] + [
        Column(display_name(metric), (_label(bucket), MINUS, _label(board.within)))
        for bucket in beyond for metric in board.metrics]
    rows = [[_system_cell(board, row, remarks=False)]
            + [change_text(row.drops[bucket][metric], display_decimals(metric, []))
               for bucket in beyond for metric in board.metrics]
            for row in board.rows if row.cells]
    notes: List[Text] = [(
        f"A bucket's score minus the score of every pair within the training limit of {board.train_limit} "
        "tokens, each on the system's seeds pooled: negative BLEU, positive TER, is a loss. In brackets the 95% "
        f"interval of the difference, each set resampled on its own ({board.n_bootstrap} resamples of each, seed "
        f"{board.seed}). The records have every metric's drop, failure columns included." if board.n_bootstrap
        else "A bucket's score minus the score within the training limit, seeds pooled; no resampling: no intervals.")]
    return Table(columns, rows, title=f"Drop beyond the training limit ({board.train_limit} tokens)", notes=notes)


def oracle_table(board: Board) -> Table:
    """Per system decoded both ways, the ranking metric (BLEU by default) of free and of
    oracle-length decoding per bucket (mean ± sd over seeds) and their difference on the
    seeds pooled, paired, with its 95% interval."""
    metric, name = board.rank_metric, display_name(board.rank_metric)
    columns = [Column("system", align="l")] + [
        Column(label, _label(bucket)) for bucket in board.buckets
        for label in (f"{name} free", f"{name} oracle", (DELTA, " [95% CI]"))]
    rows = []
    for oracle, free in board.oracles.items():
        free_row, oracle_row = board.row(free), board.row(oracle)
        cells: List[Text] = [free]
        for k, bucket in enumerate(board.buckets):
            gain = oracle_row.oracle_gains[bucket][metric]
            cells += [_score(free_row.cells[k].scores[metric], None, free_row.cells[k].n, 1),
                      _score(oracle_row.cells[k].scores[metric], None, oracle_row.cells[k].n, 1),
                      change_text(gain, 1, significant=is_significant(gain.p_value, free_row.cells[k].n))]
        rows.append(cells)
    notes: List[Text] = [(
        "Oracle-length decoding: each sentence decoded with its reference's length in target subword tokens, end "
        f"of sentence forbidden before it and forced at it (Newman et al. 2020). {name} as mean", PLUS_MINUS,
        "sd over seeds; ", DELTA, ": oracle minus free on the seeds pooled, seed k of one paired with seed k of "
        "the other, with the 95% interval of the paired resamples; ", SIGNIFICANT,
        f" p < {SIGNIFICANCE_LEVEL} (paired bootstrap resampling). What oracle lengths win beyond the limit is what "
        "the decision to stop cost there; what is left of the drop is not the stopping decision.")]
    return Table(columns, rows, title="Free and oracle-length decoding", notes=notes)


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
        unchosen = "none: every rate failed" if selection.grid else "none: its choice failed"
        rows.append(cells + [selection.chosen or unchosen])
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


#: systems beside the baseline in one figure; more are drawn in panels of PANEL_SYSTEMS
SINGLE_AXIS_SYSTEMS = 7
PANEL_SYSTEMS = 6


def curve_panels(board: Board) -> List[List[BoardRow]]:
    """The systems of each panel of a curves figure, in the board's order (ranked first), the
    baseline apart: one panel for a few systems, panels of PANEL_SYSTEMS for a whole board
    (27 curves on one axis cannot be told apart)."""
    others = [row for row in board.rows if row.cells and row.system != board.baseline]
    size = SINGLE_AXIS_SYSTEMS if len(others) <= SINGLE_AXIS_SYSTEMS else PANEL_SYSTEMS
    return [others[start:start + size] for start in range(0, len(others), size)] or [[]]


def _panel_title(rows: Sequence[BoardRow]) -> str:
    ranks = [row.rank for row in rows if row.rank]
    if not ranks:
        return "not ranked"
    title = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}–{ranks[-1]}"
    return title + (", and not ranked" if len(ranks) < len(rows) else "")


def curves_plot(board: Board, value: Callable[[BoardCell], Optional[Spread]], ylabel: str,
                mean_lengths: Sequence[float], title: Optional[str] = None,
                reference_line: Optional[float] = None, fmt: str = "png") -> bytes:
    """One curve per system of ``value`` against the bucket's mean length relative to the
    training limit, with a band from the lowest to the highest seed; the baseline (thick,
    black) in every panel where there are several (curve_panels)."""
    panels = curve_panels(board)
    baseline = next((row for row in board.rows if row.system == board.baseline and row.cells), None)
    if len(panels) == 1:
        figure, axes = panel_grid(1, (9, 5))
    else:
        figure, axes = panel_grid(len(panels), (5.2, 3.6), extra=(0, 0.6), columns=3, sharex=True)
    positions = [length / board.train_limit for length in mean_lengths]
    colours = plt.get_cmap("tab10")
    for axis, rows in zip(axes.flat, panels):
        if baseline is not None:
            _curve(axis, baseline, value, positions, "black", "-", 2.4)
        for k, row in enumerate(rows):
            _curve(axis, row, value, positions, colours(k % 10), ("-", "--", ":")[k // 10 % 3], 1.3)
        axis.axvline(1.0, color="gray", linestyle=":", linewidth=1, label="training limit")
        if reference_line is not None:
            axis.axhline(reference_line, color="gray", linestyle="-", linewidth=0.8)
        axis.grid(alpha=0.3)
        if len(panels) == 1:
            axis.set_xlabel(f"mean length of the bucket / training limit ({board.train_limit} tokens)")
            axis.set_ylabel(ylabel)
            axis.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize="small")
        else:
            axis.set_title(_panel_title(rows), fontsize="medium")
            axis.legend(loc="best", fontsize="x-small")
    if len(panels) > 1:
        figure.supxlabel(f"mean length of the bucket / training limit ({board.train_limit} tokens)")
        figure.supylabel(ylabel)
    if title:
        figure_title(figure, title)
    rendered = figure_bytes(figure, fmt)
    plt.close(figure)
    return rendered


def _curve(axis, row: BoardRow, value: Callable[[BoardCell], Optional[Spread]], positions: Sequence[float],
           colour=None, style: str = "-", width: float = 1.5, label: Optional[str] = None) -> None:
    """``row``'s means against ``positions`` with a band from its lowest to its highest seed
    (``colour`` None: the axis's next colour)."""
    points = [(x, spread) for x, spread in zip(positions, (value(cell) for cell in row.cells)) if spread is not None]
    if not points:
        return
    xs = [x for x, _ in points]
    line, = axis.plot(xs, [s.mean for _, s in points], style, marker="o", markersize=3, color=colour,
                      linewidth=width, label=label or _legend_label(row))
    axis.fill_between(xs, [s.lo for _, s in points], [s.hi for _, s in points], color=line.get_color(), alpha=0.15,
                      linewidth=0)


def bleu_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    return curves_plot(board, lambda cell: cell.scores["bleu"],
                       "BLEU (mean over seeds; band: lowest to highest seed)", mean_lengths, title)


def length_ratio_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    return curves_plot(board, lambda cell: cell.length_ratio,
                       "hypothesis / reference length (mean over seeds)", mean_lengths, title,
                       reference_line=1.0)


def failures_plot(board: Board, title: Optional[str] = None) -> bytes:
    """The failure shares of each bucket (mean over seeds) stacked, a panel per system in the
    board's order; decoded freely only (the oracle-length rows' shares are in the failure
    table: a whole board with both would be 54 panels)."""
    shares = {_legend_label(row): [[cell.scores[failure].mean if cell.scores[failure] else None
                                    for cell in row.cells] for failure in FAILURES]
              for row in board.rows if row.cells and not row.oracle_of}
    return stacked_failures(shares, [bucket.label for bucket in board.buckets], title, ["png"])["png"]


def oracle_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    """BLEU against the bucket's mean length relative to the limit, a panel per system decoded
    both ways: free decoding solid, oracle-length decoding dashed, each with a band from the
    lowest to the highest seed."""
    pairs = list(board.oracles.items())
    figure, axes = panel_grid(len(pairs), (4.6, 4.2), extra=(1, 0))
    positions = [length / board.train_limit for length in mean_lengths]
    for axis, (oracle, free) in zip(axes.flat, pairs):
        for system, label, style in ((free, "free", "-"), (oracle, "oracle length", "--")):
            _curve(axis, board.row(system), lambda cell: cell.scores["bleu"], positions, style=style, label=label)
        axis.axvline(1.0, color="gray", linestyle=":", linewidth=1)
        axis.set_title(free)
        axis.grid(alpha=0.3)
        axis.legend(fontsize="small")
    if not pairs:
        axes[0][0].text(0.5, 0.5, "no oracle-length decoding given (--oracle-decoding ORACLE=FREE)",
                        ha="center", va="center", wrap=True, transform=axes[0][0].transAxes)
    figure.supxlabel(f"mean length of the bucket / training limit ({board.train_limit} tokens)")
    figure.supylabel("BLEU (mean over seeds; band: lowest to highest seed)")
    if title:
        figure_title(figure, title)
    rendered = figure_bytes(figure, "png")
    plt.close(figure)
    return rendered


def _legend_label(row: BoardRow) -> str:
    if row.rank:
        return f"{row.rank}. {row.system}"
    if row.oracle_of:
        return f"{row.system} (oracle length)"
    return row.system + (" (did not learn)" if row.learned is False else "")


def _label(bucket: Bucket) -> Text:
    return Raw(bucket.label, bucket.latex_label)


def _system_cell(board: Board, row: BoardRow, remarks: bool) -> Text:
    """The system's name, and with ``remarks`` why it is not ranked or not complete."""
    name = row.system + (" (baseline)" if row.system == board.baseline else "")
    why = ["did not learn"] if row.learned is False else []
    if row.oracle_of:
        why.append(f"oracle-length decoding of {row.oracle_of}")
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
    within, beyond, metric = row.within, row.beyond, board.rank_metric
    return cells + [_score(within.scores[metric], within.p_values[metric], within.n, 1),
                    _score(beyond.scores[metric], beyond.p_values[metric], beyond.n, 1),
                    _score(row.retention, None, beyond.n, 2),
                    _difference(beyond.differences[metric])]


def _bucket_cells(board: Board, row: BoardRow, metrics: Sequence[str], decimals: Dict[str, int],
                  with_ratio: bool) -> List[Text]:
    cells = [str(row.rank) if row.rank else EMPTY, _system_cell(board, row, remarks=False)]
    if not row.cells:
        return cells + [EMPTY] * ((len(metrics) + with_ratio) * len(board.buckets))
    for metric in metrics:
        cells += [_score(cell.scores[metric], cell.p_values[metric], cell.n, decimals[metric])
                  for cell in row.cells]
    if with_ratio:
        cells += [_score(cell.length_ratio, None, cell.n, 2) for cell in row.cells]
    return cells


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
        f"Ranked by {display_name(board.rank_metric)} on every pair longer than the training limit of "
        f"{board.train_limit} "
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
    if board.oracles:
        notes.append("An oracle-length decoding (its system decoded with each reference's length) is listed after "
                     "the ranked systems, unranked: the references' lengths are no system's.")
    if board.buckets_per_system:
        notes.append(OWN_BUCKETS_NOTE)
    if board.baseline_failure is not None:
        notes.append(f"The baseline, {board.baseline}, has no translations "
                     f"({board.baseline_failure}): no paired tests.")
    elif board.n_bootstrap:
        notes.append((
            SIGNIFICANT, f" p < {SIGNIFICANCE_LEVEL} against {board.baseline} in the same bucket: "
            f"paired bootstrap resampling ({board.n_bootstrap} resamples, seed {board.seed}) of "
            "the seeds pooled, seed k of each system paired with seed k of the baseline; not "
            "corrected for multiple comparisons. ", FEW, f" fewer than {MIN_SIZE_FOR_MARKS} "
            "sentences: no marks. ", DELTA, f": {display_name(board.rank_metric)} beyond the limit minus "
            f"{board.baseline}'s, "
            "each on its seeds pooled, with the 95% interval of the same resamples."))
    chosen = (f"Chosen lr: the learning rate chosen per scheme on {tuning.metric}, never on the "
              "test sets (the selection is the next table)." if tuning
              else "lr: the learning rate of the training logs.")
    notes.append(f"{chosen} Updates: those each seed's training took (fairseq's last "
                 "num_updates). Retention: BLEU beyond the limit over BLEU within it, per seed. "
                 f"Step time: median seconds per training update relative to {board.baseline}.")
    return notes


def _spread_fields(name: str, value: Optional[Spread]) -> Dict[str, object]:
    if value is None:
        return {name: None, f"{name}_sd": None, f"{name}_min": None, f"{name}_max": None,
                f"{name}_seeds": None}
    return {name: value.mean, f"{name}_sd": value.sd, f"{name}_min": value.lo,
            f"{name}_max": value.hi, f"{name}_seeds": list(value.values)}
