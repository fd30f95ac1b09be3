"""The README's main command, reduced: `bash scripts/demo.sh --quick` runs to its reports."""
import json
import re
import subprocess

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.slow

SYSTEMS = {"transformer_abs", "transformer_rel", "transformer_rel_k", "transformer_lstm_pos"}


def test_quick_demo_runs_to_its_reports(tmp_path):
    out = tmp_path / "demo"
    # --quick trains 200 updates; 60 exercise the same steps in half the time
    demo = ["bash", str(REPO_ROOT / "scripts/demo.sh"), "--quick", "--updates", "60", "--out-dir", str(out)]
    result = subprocess.run(demo, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "| transformer_lstm_pos |" in result.stdout
    assert "[transformer_rel_k]" in result.stdout and "num_updates" in result.stdout  # fairseq's progress
    for phase in ("preparing the data and the test sets", "training and translating", "the reports"):
        assert re.search(rf"{phase} took \d+ s", result.stderr), phase
    for test_set, pairs in (("test", 60), ("concat_seq", 30)):
        report = out / "report" / test_set
        assert f"report: {report} " in result.stdout
        records = json.loads((report / "report.json").read_text())
        assert {record["system"] for record in records} == SYSTEMS
        assert sum(r["n"] for r in records if r["system"] == "transformer_abs" and r["bucket"] != "all") == pairs
        assert all(record["bleu"] is not None for record in records if record["n"])
        for name in ("report.md", "buckets.png", "lengths.png"):
            assert (report / name).stat().st_size > 0
    # a re-run reuses every finished step
    again = subprocess.run(demo, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert again.stdout.count("already trained") == len(SYSTEMS)
    assert again.stdout.count("already translated") == 2 * len(SYSTEMS)
    assert "start " not in again.stderr
