"""The report's and the board's records as one long pandas DataFrame, for a notebook::

    from relpos_analysis import load_board, load_report
    frame = load_board("runs/demo/leaderboard/test")       # the folder, or its board.json
    frame.query("metric == 'bleu' and set == 'beyond'")

A row per system × sentence set × metric: ``system``, ``oracle_of`` (the free system of an
oracle-length decoding, else None), ``set`` (the bucket's label, "all", or on the board
"within" and "beyond"), ``bucket_lo``, ``bucket_hi``, ``n``, ``metric`` (bleu, ter, chrf,
the segment-score metrics, the failure columns empty, short, loop and logprob, and
length_ratio), then what the records hold of it: ``value``, its 95% interval ``ci_lo``,
``ci_hi`` (the report's) or its spread over seeds ``sd``, ``min``, ``max``, ``seeds`` (the
board's), the paired test's ``p_value`` against the baseline, the difference to the baseline
``diff``, ``diff_ci_lo``, ``diff_ci_hi`` (the board's), the drop from within the training
limit ``drop``, ``drop_ci_lo``, ``drop_ci_hi`` (buckets beyond it) and an oracle-length
decoding's gain over free decoding ``oracle_gain``, ``oracle_gain_ci_lo``,
``oracle_gain_ci_hi``, ``oracle_gain_p``; missing values are NaN.  Metrics that were not
computed (a null signature) have no rows, nor have failed systems (``failed`` lists them).
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
              "_oracle_gain_p": "oracle_gain_p"}
KEYS = ["system", "oracle_of", "set", "bucket_lo", "bucket_hi", "n"]
LENGTH_RATIO = "length_ratio"


def load_report(path) -> pd.DataFrame:
    """relpos-report's records (``report.json``, or the folder holding it) as a long frame."""
    records = _read(path, "report.json")
    if not isinstance(records, list):
        raise InputError(f"{path}: not a report's records (a JSON list of records expected)")
    scored = [record for record in records if record.get("failure") is None]
    metrics = _computed_metrics({key[:-len("_signature")]: value for record in scored
                                 for key, value in record.items() if key.endswith("_signature")})
    frame = _long([{**record, "set": record["bucket"]} for record in scored], metrics + [LENGTH_RATIO])
    frame.attrs["failed"] = {record["system"]: record["failure"] for record in records if record.get("failure")}
    return frame


def load_board(path) -> pd.DataFrame:
    """relpos-leaderboard's records (``board.json``, or the folder holding it) as a long
    frame; the board's baseline, signatures and learning-rate selection are in ``attrs``."""
    board = _read(path, "board.json")
    if not isinstance(board, dict) or "records" not in board:
        raise InputError(f"{path}: not a board (a JSON object with its records expected)")
    scored = [record for record in board["records"] if record.get("set") is not None]
    frame = _long(scored, _computed_metrics(board.get("signatures") or {}) + [LENGTH_RATIO])
    frame.attrs.update({key: board.get(key) for key in ("baseline", "baseline_failure", "signatures", "tuning")})
    frame.attrs["failed"] = {record["system"]: record["failure"] for record in board["records"]
                             if record.get("set") is None}
    return frame


def _read(path, name: str):
    path = Path(path)
    if path.is_dir():
        path = path / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path} is not the JSON a report or board writes: {err}") from None


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

