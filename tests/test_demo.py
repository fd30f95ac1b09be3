"""The README's main command, reduced: `bash scripts/demo.sh --quick` runs to its report."""
import json
import subprocess

import pytest

from conftest import REPO_ROOT

pytestmark = pytest.mark.slow


def test_quick_demo_runs_to_a_report(tmp_path):
    out = tmp_path / "demo"
    result = subprocess.run(["bash", str(REPO_ROOT / "scripts/demo.sh"), "--quick", "--out-dir", str(out)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "| transformer_rel |" in result.stdout
    records = json.loads((out / "report/report.json").read_text())
    assert {record["system"] for record in records} == {"transformer_abs", "transformer_rel"}
    assert all(record["bleu"] is not None for record in records if record["n"])
    for name in ("report.md", "buckets.png", "lengths.png"):
        assert (out / "report" / name).stat().st_size > 0
    # a re-run reuses every finished step
    again = subprocess.run(["bash", str(REPO_ROOT / "scripts/demo.sh"), "--quick", "--out-dir", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0
    assert "already trained" in again.stdout + again.stderr
