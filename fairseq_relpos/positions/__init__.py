"""Position schemes, their registry and position specs.

A scheme is one module in this folder that registers itself::

    @register_scheme("t5")
    class T5Bias(AttentionScheme):
        @dataclass(frozen=True)
        class Settings:
            buckets: int = 32
        ...

Importing this package imports every module in it, so adding a scheme means adding one
file.  A position *spec* names what one stack uses: ``none``, or schemes joined by ``+``,
each with optional settings: ``abs+shaw:k=8``, ``rope+alibi``, ``t5:buckets=32,max_distance=128``,
``abs+rand:max=1024``.  The registry is ``registry.py``, specs ``spec.py``, several
attention schemes of one layer ``chain.py``.
"""
import importlib
import pkgutil

from .base import (AttentionScheme, AttentionSpan, InputScheme, PositionScheme, Positions, StackContext,
                   TrainingPositions)
from .chain import SchemeChain
from .registry import SCHEMES, register_scheme, scheme_names, settings_help
from .spec import PositionSpec, sharing

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["AttentionScheme", "AttentionSpan", "InputScheme", "PositionScheme", "PositionSpec", "Positions",
           "SCHEMES", "SchemeChain", "StackContext", "TrainingPositions", "register_scheme", "scheme_names",
           "settings_help", "sharing"]
