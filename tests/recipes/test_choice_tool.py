"""The leaderboard's learning-rate tools (``relpos_recipes.tools.choice``) write the
selection in the form ``relpos_analysis.tuning`` reads (its classes own it): a scheme whose
choice failed before it wrote its file has an empty grid, and the board's selection table
says so; a damaged choice is refused, naming it."""
import json

import pytest

from relpos_analysis.leaderboard_render import tuning_table
from relpos_analysis.io import InputError
from relpos_analysis.tables import markdown
from relpos_analysis.tuning import read_tuning
from relpos_recipes.tools import choice

POINT = {"dev_loss": 2.0, "updates": 900, "failure": None}
REL = {"grid": {"1e-3": {**POINT, "dev_loss": 2.4}, "3e-3": POINT,
                "1e-2": {"dev_loss": None, "updates": 40, "failure": "diverged (loss nan)"}},
       "chosen": "3e-3"}


def test_the_selection_the_tool_writes_is_the_one_the_board_reads(tmp_path):
    rel, huang3 = tmp_path / "rel.json", tmp_path / "huang3.json"  # huang3's choice never wrote its file
    rel.write_text(json.dumps(REL))
    out = tmp_path / "tuning.json"
    choice.main(["tuning", "--out", str(out), "--metric", "dev loss", f"rel={rel}", f"huang3={huang3}"])
    assert json.loads(out.read_text()) == {"metric": "dev loss",
                                           "schemes": {"rel": REL, "huang3": {"grid": {}, "chosen": None}}}
    table = markdown(tuning_table(read_tuning(out)))
    assert "| rel | 2.400 (900) | **2.000 (900)** | failed (40) | 3e-3 |" in table
    assert "| huang3 | – | – | – | none: its choice failed |" in table


def test_a_damaged_choice_is_refused_by_name(tmp_path):
    damaged = tmp_path / "rel.json"
    damaged.write_text(json.dumps({**REL, "grid": {"1e-3": {"dev_loss": None, "updates": 3, "failure": None}},
                                   "chosen": None}))
    out = tmp_path / "tuning.json"
    with pytest.raises(InputError, match=f"rel= {damaged}: the choice.grid.1e-3 has neither a dev_loss nor a failure"):
        choice.main(["tuning", "--out", str(out), "--metric", "dev loss", f"rel={damaged}"])
    assert not out.exists()
