"""One table model for every table the package writes, and one writer per format.

A ``Table`` is columns (a label, optionally under a group label), rows of cells, a title,
notes and metric signatures.  Text is a plain string, which each writer escapes for its
format, a ``Raw`` piece, which carries its own markdown and LaTeX (the table's symbols), or
a tuple of both.  CSV and JSON are written from records (one flat dict per row of data).

- markdown: a pipe table, a group joined to each of its labels ("G0:25 BLEU"), the notes
  as paragraphs under it, then the signatures as a list;
- LaTeX (booktabs): a row of groups over the columns they span, the notes in the caption,
  the signatures as comments;
- CSV: one column per key of any record (empty where a record has none), lists joined
  with ";";
- JSON: non-finite numbers as null (JSON has no NaN).
"""
import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union


@dataclass(frozen=True)
class Raw:
    """Text written as given: its markdown and its LaTeX."""
    markdown: str
    latex: str


Text = Union[str, Raw, Tuple[Union[str, Raw], ...]]

SIGNIFICANT = Raw("\\*", "$^*$")
SAME = Raw("=", "$^{=}$")
FEW = Raw("†", "$^\\dagger$")
PLUS_MINUS = Raw(" ± ", " $\\pm$ ")
TIMES = Raw("×", "$\\times$")
DASH = Raw(" — ", " --- ")
EMPTY = Raw("–", "--")
SENTENCES = Raw("*sentences*", "\\# sentences")
DELTA = Raw("Δ", "$\\Delta$")
MINUS = Raw(" − ", " $-$ ")


@dataclass
class Cell:
    content: Text
    span: int = 1  # columns it covers


@dataclass
class Column:
    label: Text
    group: Optional[Text] = None
    align: str = "r"  # "l" or "r"


@dataclass
class Table:
    columns: List[Column]
    rows: List[List[Union[Cell, Text]]]
    head_rows: int = 0  # leading rows that describe the columns (sizes): ruled off in LaTeX
    title: Optional[str] = None
    notes: List[Text] = field(default_factory=list)
    signatures: List[Tuple[str, str]] = field(default_factory=list)  # (metric, signature)


def markdown(table: Table) -> str:
    header = [_markdown((column.group, " ", column.label) if column.group else column.label)
              for column in table.columns]
    align = [":--" if column.align == "l" else "--:" for column in table.columns]
    lines = [_markdown_row(header), _markdown_row(align)]
    for row in table.rows:
        cells = []
        for cell in map(_cell, row):
            cells += [_markdown(cell.content)] + [""] * (cell.span - 1)
        lines.append(_markdown_row(cells))
    text = (f"## {table.title}\n\n" if table.title else "") + "\n".join(lines) + "\n"
    text += "".join(f"\n{_markdown(note)}\n" for note in table.notes)
    if table.signatures:
        text += "\nsacrebleu signatures:\n\n" + "".join(
            f"- {_markdown(metric)}: `{signature}`\n" for metric, signature in table.signatures)
    return text


def latex(table: Table) -> str:
    columns = table.columns
    lines = ["\\begin{table}[t]", "\\centering", "\\small",
             f"\\begin{{tabular}}{{{''.join(column.align for column in columns)}}}", "\\toprule"]
    if any(column.group for column in columns):
        groups, rules, start = [], [], 0
        for group, width in _runs([column.group for column in columns]):
            if group:
                groups.append(f"\\multicolumn{{{width}}}{{c}}{{{_latex(group)}}}")
                rules.append(f"\\cmidrule(lr){{{start + 1}-{start + width}}}")
            else:
                groups += [""] * width
            start += width
        lines += [" & ".join(groups) + " \\\\", " ".join(rules)]
    lines += [" & ".join(_latex(column.label) for column in columns) + " \\\\", "\\midrule"]
    for number, row in enumerate(table.rows, 1):
        cells = [_latex(cell.content) if cell.span == 1
                 else f"\\multicolumn{{{cell.span}}}{{c}}{{{_latex(cell.content)}}}"
                 for cell in map(_cell, row)]
        lines.append(" & ".join(cells) + " \\\\")
        if number == table.head_rows:
            lines.append("\\midrule")
    lines += ["\\bottomrule", "\\end{tabular}"]
    caption = ([_latex(table.title) + "."] if table.title else []) + [_latex(n) for n in table.notes]
    if caption:
        lines.append(f"\\caption{{{' '.join(caption)}}}")
    lines.append("\\end{table}")
    lines += [f"% {metric} signature: {signature}" for metric, signature in table.signatures]
    return "\n".join(lines) + "\n"


def csv_text(records: Sequence[dict]) -> str:
    names = list(dict.fromkeys(name for record in records for name in record))
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=names, restval="", lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({name: ";".join(map(repr, value)) if isinstance(value, list) else value
                         for name, value in record.items()})
    return out.getvalue()


def json_text(data) -> str:
    return json.dumps(_finite(data), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _finite(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _cell(item: Union[Cell, Text]) -> Cell:
    return item if isinstance(item, Cell) else Cell(item)


def _runs(groups: Sequence[Optional[Text]]) -> List[Tuple[Optional[Text], int]]:
    """Consecutive equal groups as (group, how many)."""
    runs: List[Tuple[Optional[Text], int]] = []
    for group in groups:
        if runs and group and runs[-1][0] == group:
            runs[-1] = (group, runs[-1][1] + 1)
        else:
            runs.append((group, 1))
    return runs


def _pieces(text: Text):
    """The strings and Raw pieces of ``text``, tuples within tuples flattened."""
    if not isinstance(text, tuple):
        return (text,)
    return tuple(piece for part in text for piece in _pieces(part))


def _markdown(text: Text) -> str:
    return "".join(piece.markdown if isinstance(piece, Raw) else piece.replace("|", "\\|")
                   for piece in _pieces(text))


def _markdown_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "<": r"\textless{}", ">": r"\textgreater{}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "|": r"\textbar{}",
}


def _latex(text: Text) -> str:
    return "".join(piece.latex if isinstance(piece, Raw)
                   else "".join(_LATEX_SPECIALS.get(char, char) for char in piece)
                   for piece in _pieces(text))
