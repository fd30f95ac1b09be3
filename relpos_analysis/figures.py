"""What the package's plots share: the Agg backend, a title that fits, reproducible bytes."""
import io
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


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
