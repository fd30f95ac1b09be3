"""What the package's plots share: the Agg backend, panels in rows, a title that fits,
reproducible bytes."""
import io
import textwrap
from typing import Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


#: panels in a row at most: a whole board's 27 systems in one row could not be read
PANEL_COLUMNS = 6


def panel_grid(panels: int, panel_size: Tuple[float, float], extra: Tuple[float, float] = (0.0, 0.0),
               columns: int = PANEL_COLUMNS, sharex: bool = False):
    """A figure of ``panels`` axes (one at least) sharing the y axis, in rows of at most
    ``columns``, the axes a row does not fill hidden; (figure, axes: rows × columns)."""
    columns = max(min(panels, columns), 1)
    rows = max(-(-panels // columns), 1)
    figure, axes = plt.subplots(rows, columns, layout="constrained", squeeze=False, sharex=sharex, sharey=True,
                                figsize=(panel_size[0] * columns + extra[0], panel_size[1] * rows + extra[1]))
    for axis in list(axes.flat)[max(panels, 1):]:
        axis.set_visible(False)
    return figure, axes


def figure_title(figure, title: str) -> None:
    """The figure's title, wrapped to the figure's width (matplotlib lets a long one run off
    both edges)."""
    font_points = 1.2 * plt.rcParams["font.size"]  # suptitle's "large"
    characters = int(figure.get_figwidth() * 72 / (0.55 * font_points))
    figure.suptitle(textwrap.fill(title, characters))


def figure_bytes(figure, fmt: str) -> bytes:
    """The figure's image in ``fmt`` (png, pdf, svg)."""
    out = io.BytesIO()
    # No creation date in the PDF, so that the same inputs give the same file.
    metadata = {"CreationDate": None} if fmt == "pdf" else None
    figure.savefig(out, format=fmt, dpi=150, metadata=metadata)
    return out.getvalue()
