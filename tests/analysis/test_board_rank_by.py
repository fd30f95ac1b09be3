"""The board ranked by another metric than BLEU (relpos-leaderboard --metrics ... --rank-by exact, as
the SCAN recipe's boards are): the ranking, the board's columns and its free/oracle-length table follow
the metric; BLEU stays the default."""
import json
import random

import pytest

from relpos_analysis import leaderboard_render, leaderboard
from relpos_analysis.leaderboard_model import build_board
from relpos_analysis.buckets import buckets_from_edges
from relpos_analysis.report_model import ScoringOptions
from relpos_analysis.io import InputError

LIMIT = 10


def references(n=80, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice("abcdefgh") for _ in range(rng.randint(4, 20))) for _ in range(n)]


def one_word_wrong(refs):
    """High BLEU, no exact match."""
    return [ref.rsplit(" ", 1)[0] + " z" for ref in refs]


def half_exact(refs):
    """Every other translation exact, the others garbage: lower BLEU, half exact."""
    return [ref if k % 2 == 0 else "z" for k, ref in enumerate(refs)]


@pytest.fixture(scope="module")
def known():
    refs = references()
    return refs, {"near": [one_word_wrong(refs)] * 2, "half": [half_exact(refs)] * 2}


def board_of(known, **kwargs):
    refs, systems = known
    lengths = [len(ref.split()) for ref in refs]
    return build_board(lengths, refs, systems, buckets_from_edges([LIMIT, 20]), LIMIT,
                       ScoringOptions(tokenize="none", n_bootstrap=50, seed=1), baseline="near", **kwargs)


def test_ranking_by_exact_match_reverses_the_bleu_ranking(known):
    by_bleu = board_of(known)
    assert [row.system for row in by_bleu.rows] == ["near", "half"]
    by_exact = board_of(known, metrics=("bleu", "ter", "exact"), rank_metric="exact")
    assert [(row.rank, row.system) for row in by_exact.rows] == [(1, "half"), (2, "near")]
    half = by_exact.row("half")
    assert half.beyond.scores["exact"].mean == pytest.approx(50, abs=10)
    assert by_exact.row("near").beyond.scores["exact"].mean == 0
    assert half.beyond.differences["exact"].value == half.beyond.scores["exact"].mean
    header = next(line for line in leaderboard_render.markdown_table(by_exact).splitlines() if line.startswith("| rank"))
    assert "exact %" in header and "BLEU" not in header


def test_the_oracle_table_compares_the_ranking_metric(known):
    refs, systems = known
    oracle_systems = dict(systems, **{"near-oracle": [refs] * 2})
    lengths = [len(ref.split()) for ref in refs]
    board = build_board(lengths, refs, oracle_systems, buckets_from_edges([LIMIT, 20]), LIMIT,
                        ScoringOptions(tokenize="none", n_bootstrap=50, seed=1), baseline="near",
                        oracles={"near-oracle": "near"}, metrics=("bleu", "exact"), rank_metric="exact")
    table = leaderboard_render.markdown_table(board)
    assert "exact % free" in table and "exact % oracle" in table and "BLEU free" not in table
    gain = board.row("near-oracle").oracle_gains[board.buckets[1]]["exact"]
    assert gain.value == 100


@pytest.mark.parametrize("metrics, rank, message", [
    (("ter", "exact"), "exact", "bleu among them"),
    (("bleu", "exact"), "chrf", "ranks by one of its metrics"),
    (("bleu", "meteor"), "bleu", "got bleu,meteor"),
])
def test_bad_metrics_are_refused(known, metrics, rank, message):
    with pytest.raises(InputError, match=message):
        board_of(known, metrics=metrics, rank_metric=rank)


def test_cli_rank_by_exact_and_its_refusal(known, tmp_path, capsys):
    refs, systems = known

    def write(name, lines):
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))
        return str(tmp_path / name)

    args = ["--source", write("src", refs), "--ref", write("ref", refs), "--length-by", "reference",
            "--train-limit", str(LIMIT), "--edges", f"{LIMIT},20", "--tokenize", "none", "--bootstrap", "50",
            "--learned-threshold", "0", "--out-dir", str(tmp_path / "board")]
    for name, seeds in systems.items():
        args += ["--system", f"{name}=" + ",".join(write(f"{name}.{k}", hyps) for k, hyps in enumerate(seeds))]
    assert leaderboard.main(args + ["--metrics", "bleu,exact", "--rank-by", "exact"]) == 0
    assert "Ranked by exact %" in capsys.readouterr().out
    records = json.loads((tmp_path / "board" / "board.json").read_text())["records"]
    half = next(r for r in records if r["system"] == "half" and r["set"] == "beyond")
    assert half["rank"] == 1 and len(half["exact_seeds"]) == 2
    assert leaderboard.main(args + ["--metrics", "bleu", "--rank-by", "exact"]) == 2
    assert "--metrics bleu --rank-by exact" in capsys.readouterr().err
