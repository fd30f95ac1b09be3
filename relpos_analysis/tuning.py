"""The learning-rate selection behind a board (``--tuning FILE``), as the recipe writes it:
per scheme, a grid of rates, each trained until its dev loss (on dev pairs within the
training limit) stopped improving, and the rate chosen by that loss::

    {"metric": "dev loss (pairs within the limit)",
     "schemes": {"transformer_rel": {
         "grid": {"1e-3": {"dev_loss": 2.31, "updates": 1800, "failure": null},
                  "1e-2": {"dev_loss": null, "updates": 40, "failure": "diverged"}},
         "chosen": "1e-3"}}}

A rate is a key as the recipe spells it ("1e-3"); ``chosen`` is one of them, the one with
the lowest dev loss, or null when every point failed (an empty grid: the choice itself
failed and recorded no training).  The file is refused, naming the key at fault, when it is
not of this form, and when it contradicts the board: a system it does not cover, or training
logs at another rate than the chosen one.  The recipe's tools write it through these
classes too (``SchemeTuning.as_json``, ``Tuning.as_json``): one owner of the form.
"""
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .io import InputError, existing_file

POINT_FORM = '{"dev_loss": number or null, "updates": integer or null, "failure": text or null}'


@dataclass(frozen=True)
class GridPoint:
    """One training of the grid."""
    dev_loss: Optional[float]  # its best dev loss; None: it has none (it failed first)
    updates: Optional[int]  # the updates it took
    failure: Optional[str]  # why it failed; None: it did not


@dataclass(frozen=True)
class SchemeTuning:
    grid: Dict[str, GridPoint]  # the rate as the file spells it -> its training; empty: the choice failed
    chosen: Optional[str]  # a key of grid; None: every point failed

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Tuning:
    metric: str  # what the rates were chosen on, in words
    schemes: Dict[str, SchemeTuning]

    def rates(self) -> List[str]:
        """Every scheme's grid rates, ascending, each value once (as first spelled)."""
        spelled: Dict[float, str] = {}
        for scheme in self.schemes.values():
            for rate in scheme.grid:
                spelled.setdefault(float(rate), rate)
        return [spelled[value] for value in sorted(spelled)]

    def point(self, scheme: str, rate: str) -> Optional[GridPoint]:
        """``scheme``'s training at the value of ``rate``, however its grid spells it."""
        return next((point for key, point in self.schemes[scheme].grid.items()
                     if float(key) == float(rate)), None)

    def at_edge(self) -> Dict[str, str]:
        """The schemes whose chosen rate is the smallest or the largest of their grid (of two
        rates or more), each with which: the best rate may lie beyond it."""
        edges = {}
        for name, scheme in self.schemes.items():
            rates = sorted(map(float, scheme.grid))
            if scheme.chosen is not None and len(rates) > 1 and float(scheme.chosen) in (rates[0], rates[-1]):
                edges[name] = "smallest" if float(scheme.chosen) == rates[0] else "largest"
        return edges

    def as_json(self) -> dict:
        return asdict(self)


def read_tuning(path, option: str = "--tuning") -> Tuning:
    """The selection in ``path``, validated; an InputError naming ``option``, the file and
    the key at fault otherwise."""
    path = existing_file(path, option)
    where = f"{option} {path}"
    top = _object(_json(path, where), where, "the file", ("metric", "schemes"))
    if not isinstance(top["metric"], str) or not top["metric"].strip():
        raise InputError(f"{where}: \"metric\" must say in words what the rates were chosen on, "
                         f"got {top['metric']!r}")
    schemes = _object(top["schemes"], where, "\"schemes\"", ())
    if not schemes:
        raise InputError(f"{where}: \"schemes\" is empty; expected one entry per scheme")
    return Tuning(top["metric"], {name: _scheme(entry, where, f"schemes.{name}")
                                  for name, entry in schemes.items()})


def read_scheme_tuning(path, what: str) -> SchemeTuning:
    """One scheme's choice (the ``schemes`` entry's form) from its own file, validated; an
    InputError naming ``what`` and the file otherwise."""
    where = f"{what} {path}"
    return _scheme(_json(Path(path), where), where, "the choice")


def _json(path: Path, where: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise InputError(f"{where}: not valid UTF-8 (byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not JSON ({err.msg}, line {err.lineno} column {err.colno})") from None


def check_tuning(tuning: Tuning, names: Sequence[str], learning_rates: Dict[str, Sequence[float]],
                 where: str) -> None:
    """The selection covers exactly the board's systems (``names``), and each system's
    training logs (``learning_rates``: name -> the rate its logs give) ran at the chosen rate."""
    unknown = [name for name in tuning.schemes if name not in names]
    if unknown:
        raise InputError(f"{where} tunes {', '.join(unknown)}, which is no --system or --failed")
    untuned = [name for name in names if name not in tuning.schemes]
    if untuned:
        raise InputError(f"{where} has no entry for {', '.join(untuned)}: the board says every "
                         "scheme's rate was chosen on dev loss, so every system needs its selection")
    for name, rates in learning_rates.items():
        chosen = tuning.schemes[name].chosen
        if chosen is None or not rates:
            continue
        if len(rates) != 1 or not math.isclose(rates[0], float(chosen), rel_tol=1e-9):
            raise InputError(f"--train-log {name}: trained at lr {','.join(f'{r:g}' for r in rates)}, "
                             f"but {where} chose {chosen} for {name}")


def _object(value, where: str, what: str, keys: Sequence[str]) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{where}: {what} must be a JSON object, got {type(value).__name__}")
    missing = [key for key in keys if key not in value]
    if missing:
        raise InputError(f"{where}: {what} has no {', '.join(repr(key) for key in missing)}")
    return value


def _scheme(entry, where: str, at: str) -> SchemeTuning:
    entry = _object(entry, where, at, ("grid", "chosen"))
    grid = _object(entry["grid"], where, f"{at}.grid", ())
    if not grid and entry["chosen"] is None:
        return SchemeTuning({}, None)  # the choice failed before any training was recorded
    if not grid:
        raise InputError(f"{where}: {at}.grid is empty; expected its rates, e.g. \"1e-3\": {POINT_FORM}")
    values = [_rate(rate, where, f"{at}.grid") for rate in grid]
    points = {rate: _point(point, where, f"{at}.grid.{rate}") for rate, point in grid.items()}
    if len(set(values)) < len(values):
        raise InputError(f"{where}: {at}.grid spells one rate twice: {', '.join(points)}")
    chosen = entry["chosen"]
    trained = {rate: point.dev_loss for rate, point in points.items() if point.dev_loss is not None}
    if chosen is None:
        if trained:
            raise InputError(f"{where}: {at}.chosen is null, but {', '.join(trained)} has a dev loss; "
                             "null is for a scheme whose every rate failed")
        return SchemeTuning(points, None)
    if not isinstance(chosen, str) or chosen not in points:
        raise InputError(f"{where}: {at}.chosen is {chosen!r}; expected one of its grid's rates "
                         f"({', '.join(points)}) or null")
    if chosen not in trained:
        raise InputError(f"{where}: {at}.chosen is {chosen}, whose training has no dev loss")
    best = min(trained.values())
    if trained[chosen] > best:
        lowest = next(rate for rate, loss in trained.items() if loss == best)
        raise InputError(f"{where}: {at}.chosen is {chosen} (dev loss {trained[chosen]:g}), but {lowest} "
                         f"has the lowest dev loss ({best:g}); the rate is chosen by dev loss")
    return SchemeTuning(points, chosen)


def _point(point, where: str, at: str) -> GridPoint:
    point = _object(point, where, at, ("dev_loss", "updates", "failure"))
    dev_loss, updates, failure = point["dev_loss"], point["updates"], point["failure"]
    if dev_loss is not None and (isinstance(dev_loss, bool) or not isinstance(dev_loss, (int, float))
                                 or not math.isfinite(dev_loss)):
        raise InputError(f"{where}: {at}.dev_loss is {dev_loss!r}; expected a finite number or null")
    if updates is not None and (isinstance(updates, bool) or not isinstance(updates, int) or updates < 0):
        raise InputError(f"{where}: {at}.updates is {updates!r}; expected a count of updates or null")
    if failure is not None and not isinstance(failure, str):
        raise InputError(f"{where}: {at}.failure is {failure!r}; expected text or null")
    if dev_loss is None and failure is None:
        raise InputError(f"{where}: {at} has neither a dev_loss nor a failure; a training has "
                         "its dev loss, or says why it has none")
    return GridPoint(None if dev_loss is None else float(dev_loss), updates, failure)


def _rate(text: str, where: str, at: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: {at} has the key {text!r}, which is no learning rate; "
                         "expected a positive number such as \"1e-3\"")
    return value
