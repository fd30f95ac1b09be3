"""The leaderboard's outputs, rendered to strings and bytes (writing them is the CLI's job).

One table: a row per system in rank order (the failed ones last, saying why), with the
parameter count, the step time relative to the baseline, BLEU beyond the training limit
(the ranking), then BLEU, TER and the hypothesis/reference length ratio per bucket, each
as mean ± standard deviation over seeds.
"""
import csv
import io
import json
from typing import Callable, Dict, List, Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from .board import METRICS, Board, BoardCell, BoardRow, Spread  # noqa: E402
from .buckets import Bucket  # noqa: E402
from .metrics import DISPLAY_NAMES  # noqa: E402
from .render import (  # noqa: E402
    MIN_SIZE_FOR_MARKS, SIGNIFICANCE_LEVEL, _figure_bytes, _latex_escape, _latex_label, figure_title,
)

EMPTY = "–"


class _Style:
    """How a table writes text, the ± of a spread, the × of a ratio and the significance mark."""

    def __init__(self, text: Callable[[str], str], plus_minus: str, times: str, marker: str, empty: str):
        self.text, self.plus_minus, self.times, self.marker, self.empty = text, plus_minus, times, marker, empty


_MARKDOWN = _Style(lambda text: text.replace("|", "\\|"), " ± ", "×", "\\*", EMPTY)
_LATEX = _Style(_latex_escape, " $\\pm$ ", "$\\times$", "$^*$", "--")


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
            rows.append({**common, "set": None, "bucket_lo": None, "bucket_hi": None, "n": None})
        for bucket, cell in groups:
            record = {**common, "set": "beyond" if bucket is board.beyond else bucket.label,
                      "bucket_lo": bucket.lo, "bucket_hi": bucket.hi, "n": cell.n}
            for metric in METRICS:
                record.update(_spread_fields(metric, cell.scores[metric]))
                record[f"{metric}_p"] = cell.p_values[metric]
            record.update(_spread_fields("length_ratio", cell.length_ratio))
            rows.append(record)
    return rows


def json_text(board: Board) -> str:
    return json.dumps({"signatures": board.signatures, "records": records(board)},
                      indent=1, ensure_ascii=False) + "\n"


def csv_text(board: Board) -> str:
    rows = records(board)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: ";".join(f"{v:.4f}" for v in value) if isinstance(value, list)
                         else value for key, value in row.items()})
    return out.getvalue()


def markdown_table(board: Board, title: Optional[str] = None) -> str:
    header, sizes = _header(board, lambda bucket: bucket.label)
    lines = ([f"## {title}", ""] if title else []) + [
        _markdown_row(header),
        _markdown_row([":--", ":--"] + ["--:"] * (len(header) - 2)),
        _markdown_row(["", "*sentences*"] + sizes),
    ]
    lines += [_markdown_row(_row_cells(board, row, _MARKDOWN)) for row in board.rows]
    return "\n".join(lines) + "\n\n" + _note(board, _MARKDOWN.marker) + "\n"


def latex_table(board: Board, title: Optional[str] = None) -> str:
    header, sizes = _header(board, _latex_label)
    lines = [
        "\\begin{table}[t]", "\\centering", "\\small",
        f"\\begin{{tabular}}{{rl{'r' * (len(header) - 2)}}}", "\\toprule",
        " & ".join(header) + " \\\\", "\\midrule",  # labels are LaTeX already
        " & \\# sentences & " + " & ".join(sizes) + " \\\\", "\\midrule",
    ]
    lines += [" & ".join(_row_cells(board, row, _LATEX)) + " \\\\" for row in board.rows]
    caption = _latex_escape(_note(board, "*"))
    if title:
        caption = f"{_latex_escape(title)}. {caption}"
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{caption}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"


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
    rendered = _figure_bytes(figure, fmt)
    plt.close(figure)
    return rendered


def bleu_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    return curves_plot(board, lambda cell: cell.scores["bleu"],
                       "BLEU (mean over seeds; band: lowest to highest seed)", mean_lengths, title)


def length_ratio_plot(board: Board, mean_lengths: Sequence[float], title: Optional[str] = None) -> bytes:
    return curves_plot(board, lambda cell: cell.length_ratio,
                       "hypothesis / reference length (mean over seeds)", mean_lengths, title,
                       reference_line=1.0)


def _header(board: Board, label: Callable[[Bucket], str]):
    groups = [label(bucket) for bucket in board.buckets]
    header = ["rank", "system", "parameters", "step time", f"BLEU {label(board.beyond)}"]
    header += [f"{group} {DISPLAY_NAMES[metric]}" for metric in METRICS for group in groups]
    header += [f"{group} length ratio" for group in groups]
    sizes = ["", "", str(board.beyond_size)] + [
        _size(n) for _ in METRICS for n in board.sizes] + [_size(n) for n in board.sizes]
    return header, sizes


def _row_cells(board: Board, row: BoardRow, style: _Style) -> List[str]:
    parameters = f"{row.training.parameters:,}" if row.training.parameters else style.empty
    step = f"{row.step_time_ratio:.2f}{style.times}" if row.step_time_ratio else style.empty
    name = row.system + (" (baseline)" if row.system == board.baseline else "")
    if row.failure:
        name += f" — {'failed' if not row.cells else 'some seeds failed'}: {row.failure}"
    cells = [str(row.rank) if row.rank else style.empty, style.text(name), parameters, step]
    if not row.cells:
        return cells + [style.empty] * (1 + (len(METRICS) + 1) * len(board.buckets))
    beyond = row.beyond
    cells.append(_score(beyond.scores["bleu"], beyond.p_values["bleu"], beyond.n, style))
    for metric in METRICS:
        cells += [_score(cell.scores[metric], cell.p_values[metric], cell.n, style)
                  for cell in row.cells]
    cells += [_score(cell.length_ratio, None, cell.n, style, digits=2) for cell in row.cells]
    return cells


def _score(value: Optional[Spread], p_value: Optional[float], n: int, style: _Style,
           digits: int = 1) -> str:
    if value is None:
        return style.empty
    text = f"{value.mean:.{digits}f}"
    if len(value.values) > 1:
        text += f"{style.plus_minus}{value.sd:.{digits}f}"
    significant = p_value is not None and p_value < SIGNIFICANCE_LEVEL and n >= MIN_SIZE_FOR_MARKS
    return text + (style.marker if significant else "")


def _size(n: int) -> str:
    return f"{n}†" if 0 < n < MIN_SIZE_FOR_MARKS else str(n)


def _note(board: Board, marker: str) -> str:
    seeds = sorted({row.seeds for row in board.rows if row.seeds})
    seed_text = " or ".join(str(s) for s in seeds) or "no"
    test = (f"{marker} p < {SIGNIFICANCE_LEVEL} against {board.baseline} in the same bucket: paired "
            f"bootstrap resampling ({board.n_bootstrap} resamples, seed {board.seed}) of the seeds "
            f"pooled, seed k of each system paired with seed k of the baseline; not corrected "
            f"for multiple comparisons. † fewer than {MIN_SIZE_FOR_MARKS} sentences: no marks. "
            if board.n_bootstrap else "")
    return (f"Mean ± sample standard deviation over {seed_text} training seeds (each seed's "
            f"corpus score; per-seed values, minimum and maximum in the JSON/CSV output). "
            f"Ranked by BLEU on every pair longer than the training limit of "
            f"{board.train_limit} tokens ({board.beyond.label}). {test}"
            f"Step time: median seconds per training update relative to {board.baseline}. "
            f"Signatures: BLEU `{board.signatures.get('bleu')}`, TER `{board.signatures.get('ter')}`.")


def _spread_fields(name: str, value: Optional[Spread]) -> Dict[str, object]:
    if value is None:
        return {name: None, f"{name}_sd": None, f"{name}_min": None, f"{name}_max": None,
                f"{name}_seeds": None}
    return {name: value.mean, f"{name}_sd": value.sd, f"{name}_min": value.lo,
            f"{name}_max": value.hi, f"{name}_seeds": list(value.values)}


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
