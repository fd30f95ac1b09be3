"""fairseq-relpos: position schemes for fairseq Transformers.

Use it as a fairseq plugin (``--user-dir fairseq_relpos``) or import it for the hub API::

    from fairseq_relpos import RelPosTransformerModel
    model = RelPosTransformerModel.from_pretrained("checkpoints", "checkpoint_best.pt", "data-bin")
"""
import fairseq_relpos_compat  # noqa: F401  (fixes must precede fairseq's import)

from .models.architectures import ARCHITECTURES, STUDY_ARCHITECTURES
from .models.labels import effective_label
from .models.relpos_transformer import RelPosTransformerModel, build_standalone_model, count_parameters
from .positions import PositionSpec, register_scheme, scheme_names
from . import oracle_length  # noqa: F401  (registers the relpos_translation task)

__all__ = [
    "ARCHITECTURES",
    "RelPosTransformerModel",
    "STUDY_ARCHITECTURES",
    "build_standalone_model",
    "PositionSpec",
    "count_parameters",
    "effective_label",
    "register_scheme",
    "scheme_names",
]
