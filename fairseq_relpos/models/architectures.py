"""The architectures: presets of position specs over the ``relpos_transformer`` model, as a
table that needs no fairseq (``relpos_transformer.py`` registers them with fairseq; the table
itself is ``architecture_table.py``, which imports nothing)."""
from ..modules.flex import uncovered
from ..positions import PositionSpec
from .architecture_table import ARCHITECTURES, CROSS_ARCHITECTURES, STUDY_ARCHITECTURES  # noqa: F401


def flex_covers(arch: str) -> bool:
    """Whether ``--attention-impl flex`` covers every attention scheme of ``arch``."""
    return not any(uncovered(PositionSpec.parse(spec)) for spec in (ARCHITECTURES[arch],
                                                                       CROSS_ARCHITECTURES.get(arch, "none")))
