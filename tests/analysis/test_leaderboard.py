"""The leaderboard (relpos_analysis.leaderboard_model, relpos_analysis.leaderboard_render, python -m relpos_analysis.leaderboard) on
translations of known quality: the ranking, the seeds' mean and spread against sacrebleu's
own corpus scores, the pooled paired test, failures kept on the board, the training logs,
and the refusals of bad input."""
import csv
import json
import random
import statistics

import pytest
from sacrebleu.metrics import BLEU

from relpos_analysis import leaderboard_render, leaderboard
from relpos_analysis.leaderboard_model import build_board, training_info
from relpos_analysis.buckets import buckets_from_edges
from relpos_analysis.report_model import ScoringOptions
from relpos_analysis.io import InputError

LIMIT = 20


def corpus(n=160, seed=0):
    """References of 4-40 words, so that about half are beyond LIMIT."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(4, 40))) for _ in range(n)]


def degraded(references, short_error, long_error, seed):
    """Each word replaced with probability short_error (sentences within LIMIT) or
    long_error (beyond it)."""
    rng = random.Random(seed)
    out = []
    for ref in references:
        error = short_error if len(ref.split()) <= LIMIT else long_error
        out.append(" ".join("x" if rng.random() < error else word for word in ref.split()))
    return out


@pytest.fixture(scope="module")
def known():
    refs = corpus()
    # (error within the limit, error beyond it): the ranking is rel, mid, abs; each learned
    # the task (BLEU above 95 within the limit)
    systems = {
        "abs": [degraded(refs, 0.01, 0.6, seed) for seed in (1, 2)],
        "rel": [degraded(refs, 0.01, 0.1, seed) for seed in (3, 4)],
        "mid": [degraded(refs, 0.0, 0.35, seed) for seed in (5, 6)],
    }
    return refs, systems


def test_ranking_and_spreads_match_sacrebleu(known):
    refs, systems = known
    lengths = [len(ref.split()) for ref in refs]
    buckets = buckets_from_edges([LIMIT, 30])
    board = build_board(lengths, refs, systems, buckets, LIMIT, ScoringOptions(tokenize="none", n_bootstrap=100, seed=1),
                        baseline="abs", failures={"huang3": "seed 1 failed in training: diverged"})
    assert [(row.rank, row.system) for row in board.rows] == [(1, "rel"), (2, "mid"), (3, "abs"), (None, "huang3")]
    beyond = [i for i, n in enumerate(lengths) if n > LIMIT]
    for name, seeds in systems.items():
        row = board.row(name)
        expected = [BLEU(tokenize="none").corpus_score([seeds[k][i] for i in beyond], [[refs[i] for i in beyond]]).score
                    for k in range(2)]
        assert row.beyond.scores["bleu"].values == pytest.approx(expected)
        assert row.beyond.scores["bleu"].sd == pytest.approx(statistics.stdev(expected))
        assert row.beyond.n == len(beyond) == board.beyond_size
        assert (row.beyond.p_values["bleu"] is None) == (name == "abs")
    assert board.row("rel").beyond.p_values["bleu"] < 0.05
    assert board.row("rel").cells[0].length_ratio.mean == pytest.approx(1.0)
    assert board.row("huang3").cells == [] and board.row("huang3").failure.startswith("seed 1")


def test_equal_means_share_a_rank_and_a_lone_seed_has_no_spread(known):
    refs, systems = known
    lengths = [len(ref.split()) for ref in refs]
    twins = {"abs": systems["abs"], "twin": [systems["abs"][0]], "copy": [systems["abs"][0]]}
    board = build_board(lengths, refs, twins, buckets_from_edges([LIMIT]), LIMIT,
                        ScoringOptions(tokenize="none", n_bootstrap=0))
    ranks = {row.system: row.rank for row in board.rows}
    assert ranks["twin"] == ranks["copy"]
    assert board.row("twin").beyond.scores["bleu"].sd == 0.0
    assert board.row("twin").beyond.p_values["bleu"] is None  # no test without resampling


def test_training_logs_give_parameters_and_step_time():
    log = ["2026 | INFO | fairseq_cli.train | num. shared model params: 1,234,567 (num. trained: 1,234,567)",
           "2026 | INFO | train_inner | epoch 001:     20 / 791 loss=9.9, ups=0.5, wpb=1805",
           "2026 | INFO | train_inner | epoch 001:     40 / 791 loss=9.1, ups=0.25, wpb=1805",
           "2026 | INFO | train | epoch 001 | loss 9.5 | ups 1.0 | num_updates 60"]
    info = training_info([log])
    assert info.parameters == 1234567 and info.seconds_per_update == 2.0  # median of 2, 4 and 1
    assert training_info([[]]).parameters is None
    with pytest.raises(InputError, match="disagree on its parameter count"):
        training_info([log, [log[0].replace("1,234,567", "7")]])


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_cli_writes_every_output_and_keeps_the_failed_system(known, tmp_path, capsys):
    refs, systems = known
    args = ["--source", write(tmp_path / "src", refs), "--ref", write(tmp_path / "ref", refs),
            "--train-limit", str(LIMIT), "--edges", f"{LIMIT},30", "--tokenize", "none",
            "--bootstrap", "50", "--seed", "3", "--out-dir", str(tmp_path / "board"),
            "--failed", "huang3=seed 1 failed in translating test: refused"]
    for name, seeds in systems.items():
        files = [write(tmp_path / f"{name}.{k}", hyps) for k, hyps in enumerate(seeds)]
        args += ["--system", f"{name}={','.join(files)}"]
    args += ["--train-log", f"abs={write(tmp_path / 'abs.log', ['| train | epoch 001 | ups 2.0 |'])}",
             "--train-log", f"rel={write(tmp_path / 'rel.log', ['| train | epoch 001 | ups 1.0 |'])}"]
    assert leaderboard.main(args) == 0
    table = capsys.readouterr().out
    assert table.index("| 1 | rel |") < table.index("| 2 | mid |") < table.index("| 3 | abs (baseline) |")
    assert "huang3 — failed: seed 1 failed in translating test: refused" in table
    assert "| 2.00× |" in table  # rel's step time over abs's
    names = {path.name for path in (tmp_path / "board").iterdir()}
    assert names == {"board.md", "board.json", "board.csv", "board.tex", "bleu.png", "length_ratio.png",
                     "failures.png", "oracle.png"}
    records = json.loads((tmp_path / "board" / "board.json").read_text())["records"]
    rel_beyond = next(r for r in records if r["system"] == "rel" and r["set"] == "beyond")
    assert rel_beyond["rank"] == 1 and len(rel_beyond["bleu_seeds"]) == 2 and rel_beyond["bleu_p"] < 0.05
    assert any(r["system"] == "huang3" and r["failure"] for r in records)
    assert "\\pm" in (tmp_path / "board" / "board.tex").read_text()


@pytest.mark.parametrize("extra, message", [
    (["--system", "abs"], "--system expects NAME=HYP"),
    (["--system", "abs=h", "--system", "abs=h"], "--system names abs more than once"),
    (["--system", "abs=h,"], "an empty file name"),
    (["--system", "abs=h", "--train-log", "rel=l"], "--train-log names rel, which is no --system"),
    (["--system", "abs=h", "--baseline", "rel"], "rel"),
    (["--system", "abs=h", "--train-limit", "0"], "--train-limit must be positive"),
    (["--system", "abs=h", "--workers", "0"], "--workers must be at least 1"),
])
def test_cli_refusals(tmp_path, capsys, extra, message):
    source = write(tmp_path / "src", ["a b", "c d"])
    write(tmp_path / "h", ["a b", "c d"])
    base = ["--source", source, "--ref", source, "--train-limit", "10"]
    assert leaderboard.main(base + [e.replace("h", str(tmp_path / "h")) if e.startswith("abs=") else e
                                    for e in extra]) == 2
    assert message in capsys.readouterr().err


def cli_args(known, tmp_path, systems=None):
    """The leaderboard's command line for ``systems`` (default: all known ones)."""
    refs, all_systems = known
    args = ["--source", write(tmp_path / "src", refs), "--ref", write(tmp_path / "ref", refs),
            "--train-limit", str(LIMIT), "--edges", f"{LIMIT},30", "--tokenize", "none",
            "--bootstrap", "50", "--out-dir", str(tmp_path / "board")]
    for name, seeds in (systems or all_systems).items():
        files = [write(tmp_path / f"{name}.{k}", hyps) for k, hyps in enumerate(seeds)]
        args += ["--system", f"{name}={','.join(files)}"]
    return args


def test_a_baseline_that_failed_on_every_seed_leaves_a_current_board(known, tmp_path, capsys):
    """The board of what exists, naming the missing baseline, replaces the previous run's."""
    refs, systems = known
    assert leaderboard.main(cli_args(known, tmp_path) + ["--baseline", "abs"]) == 0
    capsys.readouterr()
    survivors = {name: seeds for name, seeds in systems.items() if name != "abs"}
    assert leaderboard.main(cli_args(known, tmp_path, survivors) + [
        "--baseline", "abs", "--failed", "abs=seed 1: diverged; seed 2: diverged"]) == 0
    table = capsys.readouterr().out
    assert "| – | abs (baseline) — failed: seed 1: diverged; seed 2: diverged |" in table
    assert "The baseline, abs, has no translations (seed 1: diverged; seed 2: diverged): no paired tests." in table
    assert not any("\\*" in line for line in table.splitlines() if line.startswith("|"))  # nothing tested
    board = tmp_path / "board"
    assert (board / "board.md").read_text() == table
    data = json.loads((board / "board.json").read_text())
    assert data["baseline"] == "abs" and data["baseline_failure"].startswith("seed 1")
    assert [(r["rank"], r["system"]) for r in data["records"] if r["set"] == "beyond"] == [(1, "rel"), (2, "mid")]
    assert all(r["bleu_p"] is None for r in data["records"] if r["set"])
    with open(board / "board.csv", newline="") as f:
        assert ("abs", "seed 1: diverged; seed 2: diverged") in {(r["system"], r["failure"]) for r in csv.DictReader(f)}


def test_a_board_of_failures_only_is_written(known, tmp_path, capsys):
    refs, _ = known
    args = ["--source", write(tmp_path / "src", refs), "--ref", write(tmp_path / "ref", refs),
            "--train-limit", str(LIMIT), "--out-dir", str(tmp_path / "board"),
            "--failed", "abs=diverged", "--failed", "rel=refused long inputs"]
    assert leaderboard.main(args) == 0
    table = capsys.readouterr().out
    assert "abs (baseline) — failed: diverged" in table and "rel — failed: refused long inputs" in table
    with open(tmp_path / "board" / "board.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(row["system"], row["failure"], row["rank"]) for row in rows] == [
        ("abs", "diverged", ""), ("rel", "refused long inputs", "")]


def test_a_system_scoring_like_the_baseline_is_never_significant_on_the_board(known, tmp_path, capsys):
    refs, systems = known
    spaced = {"abs": systems["abs"], "spaced": [[hyp + "  " for hyp in seed] for seed in systems["abs"]]}
    lengths = [len(ref.split()) for ref in refs]
    board = build_board(lengths, refs, spaced, buckets_from_edges([LIMIT, 30]), LIMIT,
                        ScoringOptions(tokenize="none", n_bootstrap=100, seed=1))
    row = board.row("spaced")
    for cell in row.cells + [row.beyond]:
        assert all(p == 1.0 for p in cell.p_values.values())
    table = leaderboard_render.markdown_table(board)
    assert not any("\\*" in line for line in table.splitlines() if line.startswith("|"))


@pytest.mark.parametrize("log, message", [
    ("a folder", "--train-log abs: {path} is a folder; expected a file"),
    (["BLEU = 12.3", "nothing from fairseq"], "--train-log abs: {path} is not a fairseq-train log"),
])
def test_a_training_log_that_is_not_fairseqs_is_refused(tmp_path, capsys, log, message):
    source = write(tmp_path / "src", ["a b", "c d"])
    if log == "a folder":
        path = tmp_path / "logs"
        path.mkdir()
    else:
        path = tmp_path / "train.log"
        write(path, log)
    assert leaderboard.main(["--source", source, "--ref", source, "--train-limit", "10",
                             "--system", f"abs={source}", "--train-log", f"abs={path}"]) == 2
    assert capsys.readouterr().err.startswith("error: " + message.format(path=path))


def test_one_writer_per_format_for_the_board(known, tmp_path, capsys):
    """The board's LaTeX spells its symbols in LaTeX (the markdown's ±, †, ∞ and — are no
    LaTeX), and special characters of names are escaped in both formats."""
    refs, systems = known
    renamed = {"a|b_c&d": systems["abs"], "rel": systems["rel"]}
    assert leaderboard.main(cli_args(known, tmp_path, renamed) + [
        "--failed", "huang3=seed 1: 100% of memory"]) == 0
    table = capsys.readouterr().out
    assert "| a\\|b_c&d (baseline) |" in table
    latex = (tmp_path / "board" / "board.tex").read_text(encoding="utf-8")
    assert latex.isascii(), sorted({c for c in latex if not c.isascii()})
    assert "a\\textbar{}b\\_c\\&d (baseline)" in latex and "huang3 --- failed: seed 1: 100\\% of memory" in latex
    assert " $\\pm$ " in latex and "$^\\dagger$" in latex and "21--$\\infty$" in latex


def test_a_whole_board_is_drawn_in_panels_of_ranks_with_the_baseline_in_each():
    """27 systems: the curves figures draw them six to a panel in rank order (what failed
    has no curve), each panel with the baseline; a few systems share one axis."""
    refs = corpus(n=60)
    lengths = [len(ref.split()) for ref in refs]
    errors = {f"s{k:02d}": k / 40 for k in range(26)}
    systems = {"abs": [degraded(refs, 0.01, 0.7, 1)],
               **{name: [degraded(refs, 0.01, error, 2)] for name, error in errors.items()}}
    options = ScoringOptions(tokenize="none", n_bootstrap=10, seed=1)
    board = build_board(lengths, refs, systems, buckets_from_edges([LIMIT, 30]), LIMIT, options, baseline="abs",
                        failures={"huang3": "diverged"})
    panels = leaderboard_render.curve_panels(board)
    assert [len(panel) for panel in panels] == [6, 6, 6, 6, 2]
    drawn = [row.system for panel in panels for row in panel]
    assert drawn == [row.system for row in board.rows if row.system not in ("abs", "huang3")]
    assert [row.rank for row in panels[0]] == [1, 2, 3, 4, 5, 6]
    assert leaderboard_render._panel_title(panels[0]) == "ranks 1–6"
    assert leaderboard_render.bleu_plot(board, [10, 25, 35]).startswith(b"\x89PNG")
    few = build_board(lengths, refs, {name: systems[name] for name in ("abs", "s00", "s01")},
                      buckets_from_edges([LIMIT, 30]), LIMIT, options, baseline="abs")
    assert [[row.system for row in panel] for panel in leaderboard_render.curve_panels(few)] == [["s00", "s01"]]


def png_size(png: bytes):
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_a_whole_boards_failures_and_oracle_lengths_are_drawn_in_rows_of_panels():
    """27 systems, each also decoded at the references' lengths: the panels of the failure
    and oracle figures stand in rows of six, not in one row a hundred inches wide; the failure
    figure has the freely decoded systems only."""
    refs = corpus(n=40)
    lengths = [len(ref.split()) for ref in refs]
    names = ["abs"] + [f"s{k:02d}" for k in range(26)]
    systems = {name: [degraded(refs, 0.01, k / 40, 1)] for k, name in enumerate(names)}
    systems.update({f"{name}+oracle": [degraded(refs, 0.01, k / 50, 2)] for k, name in enumerate(names)})
    options = ScoringOptions(tokenize="none", n_bootstrap=10, seed=1)
    board = build_board(lengths, refs, systems, buckets_from_edges([LIMIT, 30]), LIMIT, options, baseline="abs",
                        oracles={f"{name}+oracle": name for name in names})
    for png in (leaderboard_render.failures_plot(board), leaderboard_render.oracle_plot(board, [10, 25, 35])):
        width, height = png_size(png)
        assert png.startswith(b"\x89PNG") and 1 < width / height < 2.5, (width, height)  # five rows of six


def test_a_board_and_a_report_of_one_run_bucket_alike_without_edges(tmp_path):
    """Without --edges, both commands bucket at 1, 1.5, 2 and 3 times --train-limit: the
    report and the board of one run compare the same sentence sets."""
    from relpos_analysis import report

    common = ["--source", str(tmp_path / "src"), "--ref", str(tmp_path / "ref"), "--train-limit", "10"]
    board = leaderboard.BoardRequest.from_args(leaderboard.build_parser().parse_args(common + ["--system", "a=h"]))
    table = report.ReportRequest.from_args(report.build_parser().parse_args(common + ["--system", "a=h"]))
    assert board.buckets == table.buckets == buckets_from_edges([10, 15, 20, 30])
