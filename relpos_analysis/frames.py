"""The report's and the board's records as one long pandas DataFrame, for a notebook::

    from relpos_analysis import load_board, load_report
    frame = load_board("runs/demo/leaderboard/test")       # the folder, or its board.json
    frame.query("metric == 'bleu' and set == 'beyond'")

A row per system × sentence set × metric: ``system``, ``oracle_of`` (the free system of an
oracle-length decoding, else None), ``set`` (the bucket's label, "all", or on the board
"within" and "beyond"), ``bucket_lo``, ``bucket_hi``, ``n``, ``metric`` (bleu, ter, chrf, exact,
the segment-score metrics, the failure columns empty, short, loop and logprob, and
length_ratio), then what the records hold of it: ``value``, its 95% interval ``ci_lo``,
``ci_hi`` (the report's) or its spread over seeds ``sd``, ``min``, ``max``, ``seeds`` (the
board's), the paired test's ``p_value`` against the baseline, the difference to the baseline
``diff``, ``diff_ci_lo``, ``diff_ci_hi`` (the board's), the drop from within the training
limit ``drop``, ``drop_ci_lo``, ``drop_ci_hi`` (buckets beyond it) and an oracle-length
decoding's gain over free decoding ``oracle_gain``, ``oracle_gain_ci_lo``,
``oracle_gain_ci_hi``, ``oracle_gain_p``, and on the whole-set row of ``--reference-baseline``'s
row the metric's ``length_bias`` (relpos_analysis.report_model.LengthBias); missing values are NaN.
Metrics that were not computed (a null signature) have no rows, nor have failed systems (``failed`` lists them).
"""
import json
from pathlib import Path
from typing import Dict, List

import pandas as pd

from .io import InputError

# the records' suffix of each quantity -> its column in the frame (the metric's own value first)
QUANTITIES = {"": "value", "_ci_lo": "ci_lo", "_ci_hi": "ci_hi", "_sd": "sd", "_min": "min", "_max": "max",
              "_seeds": "seeds", "_p": "p_value", "_diff": "diff", "_diff_ci_lo": "diff_ci_lo",
              "_diff_ci_hi": "diff_ci_hi", "_drop": "drop", "_drop_ci_lo": "drop_ci_lo",
              "_drop_ci_hi": "drop_ci_hi", "_oracle_gain": "oracle_gain",
              "_oracle_gain_ci_lo": "oracle_gain_ci_lo", "_oracle_gain_ci_hi": "oracle_gain_ci_hi",
              "_oracle_gain_p": "oracle_gain_p", "_length_bias": "length_bias"}
KEYS = ["system", "oracle_of", "set", "bucket_lo", "bucket_hi", "n"]
LENGTH_RATIO = "length_ratio"


def load_report(path) -> pd.DataFrame:
    """relpos-report's records (``report.json``, or the folder holding it) as a long frame."""
    path, records = _read(path, "report.json")
    if not isinstance(records, list):
        raise InputError(f"{path}: not a report's records (a JSON list of records expected)")
    _check_objects(path, records)
    scored = [record for record in records if record.get("failure") is None]
    signatures = {key[:-len("_signature")]: value for record in scored
                  for key, value in record.items() if key.endswith("_signature")}
    metrics = _computed_metrics(signatures)
    unsigned = sorted(_scored_metrics(scored) - set(metrics))
    if unsigned:  # a metric without its signature would leave the frame without a word
        raise InputError(f"{path}: its records score {unsigned[0]!r} but none has its '{unsigned[0]}_signature'")
    _check_records(path, records, scored, "bucket", [*metrics, LENGTH_RATIO],
                   [f"{metric}_signature" for metric in signatures])
    frame = _long([{**record, "set": record["bucket"]} for record in scored], metrics + [LENGTH_RATIO])
    frame.attrs["failed"] = {record["system"]: record["failure"] for record in records if record.get("failure")}
    return frame


def load_board(path) -> pd.DataFrame:
    """relpos-leaderboard's records (``board.json``, or the folder holding it) as a long
    frame; the board's baseline, signatures and learning-rate selection are in ``attrs``."""
    path, board = _read(path, "board.json")
    if not isinstance(board, dict) or not isinstance(board.get("records"), list):
        raise InputError(f"{path}: not a board (a JSON object with its records expected)")
    records = board["records"]
    _check_objects(path, records)
    signatures = board.get("signatures") or {}
    if not isinstance(signatures, dict):
        raise InputError(f"{path}: its 'signatures' are not a JSON object (metric -> signature)")
    scored = [record for record in records if record.get("set") is not None]
    metrics = _computed_metrics(signatures)
    unsigned = sorted(_scored_metrics(scored) - set(metrics))
    if unsigned:  # a metric without its signature would leave the frame without a word
        raise InputError(f"{path}: its 'signatures' have no {unsigned[0]!r}, which its records score")
    _check_records(path, records, scored, "set", [*metrics, LENGTH_RATIO], [])
    frame = _long(scored, metrics + [LENGTH_RATIO])
    frame.attrs.update({key: board.get(key) for key in ("baseline", "baseline_failure", "signatures", "tuning")})
    frame.attrs["failed"] = {record["system"]: record["failure"] for record in records if record.get("set") is None}
    return frame


def _read(path, name: str):
    """The file (PATH, or NAME in the folder PATH) and its JSON."""
    path = Path(path)
    if path.is_dir():
        path = path / name
    try:
        return path, json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path} is not the JSON a report or board writes: {err}") from None


def _scored_metrics(records: List[dict]) -> set:
    """The metrics ``records`` hold a value of (a metric's fields include its drop)."""
    return {key for record in records for key, value in record.items()
            if value is not None and f"{key}_drop" in record}


def _check_objects(path: Path, records: list) -> None:
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise InputError(f"{path}: record {index + 1} is not a JSON object")


def _check_records(path: Path, records: List[dict], scored: List[dict], set_key: str, metrics: List[str],
                   also: List[str]) -> None:
    """Every scored record has the keys that make its rows (its system and set, the bucket's
    bounds and size, each metric's value, ``also``), and numbers (or null) where numbers belong:
    a damaged record is named, rather than dropping rows or surfacing later in pandas."""
    required = ["system", set_key, "bucket_lo", "bucket_hi", "n", *metrics, *also]
    numeric = {"bucket_lo", "bucket_hi", "n"} | {metric + suffix for metric in metrics for suffix in QUANTITIES}
    for index, record in enumerate(records):
        if record not in scored:
            continue
        where = f"{path}: record {index + 1} ({record.get('system')!r}, {record.get(set_key)!r})"
        missing = next((key for key in required if key not in record), None)
        if missing:
            raise InputError(f"{where} has no key {missing!r}")
        for key in numeric & set(record):
            value = record[key]
            values = value if key.endswith("_seeds") and isinstance(value, list) else [value]
            if not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values):
                raise InputError(f"{where}: {key!r} is {value!r}, not a number")


def _computed_metrics(signatures: Dict[str, object]) -> List[str]:
    return [metric for metric, signature in signatures.items() if signature is not None]


def _long(records: List[dict], metrics: List[str]) -> pd.DataFrame:
    """A row per record and metric, with the quantities the records have fields for."""
    rows = []
    present = set(KEYS) | {"metric", "value"}
    for record in records:
        keys = {key: record.get(key) for key in KEYS}
        for metric in metrics:
            values = {column: record[metric + suffix] for suffix, column in QUANTITIES.items()
                      if metric + suffix in record}
            present |= set(values)
            rows.append({**keys, "metric": metric, **values})
    columns = [column for column in KEYS + ["metric"] + list(QUANTITIES.values()) if column in present]
    # counts stay integers where some are missing (an open bucket's upper end)
    return pd.DataFrame(rows, columns=columns).astype({key: "Int64" for key in ("bucket_lo", "bucket_hi", "n")})

