"""The board of issue #24's protocol (python -m relpos_analysis.leaderboard): each scheme's learning
rate and the updates its trainings took, read from real fairseq-train logs; BLEU within the
training limit and the retention beyond it; systems that did not learn the task listed apart,
unranked; the difference to the baseline with its paired bootstrap interval; the
learning-rate selection (--tuning) and the refusal of a malformed one."""
import csv
import json
import statistics

import pytest
from sacrebleu.metrics import BLEU

from relpos_analysis import bootstrap, leaderboard
from relpos_analysis.leaderboard_model import training_info
from conftest import REPO_ROOT, TINY_TRAIN_ARGS, fairseq_in_process
from test_leaderboard import LIMIT, corpus, degraded, write

# (error within the limit, error beyond it), two seeds each: abs and rel learned the task;
# slow reaches only ~55 BLEU within the limit, and would rank second on extrapolation
ERRORS = {"abs": (0.01, 0.6), "rel": (0.01, 0.1), "slow": (0.2, 0.25)}


@pytest.fixture(scope="module")
def protocol():
    refs = corpus()
    systems = {name: [degraded(refs, *errors, seed=10 * k + n) for k in range(2)]
               for n, (name, errors) in enumerate(ERRORS.items())}
    return refs, systems


def board_args(protocol, tmp_path, *extra):
    refs, systems = protocol
    args = ["--source", write(tmp_path / "src", refs), "--ref", write(tmp_path / "ref", refs),
            "--train-limit", str(LIMIT), "--edges", f"{LIMIT},30", "--tokenize", "none",
            "--bootstrap", "200", "--seed", "7", "--baseline", "abs", "--out-dir", str(tmp_path / "board")]
    for name, seeds in systems.items():
        files = [write(tmp_path / f"{name}.{k}", hyps) for k, hyps in enumerate(seeds)]
        args += ["--system", f"{name}={','.join(files)}"]
    return args + list(extra)


def board_lines(table):
    """The first table's rows (the ranking), by system."""
    first = next(block for block in table.split("\n\n") if block.startswith("| rank |"))
    return {row.split(" | ")[1].split(" ")[0]: row for row in first.splitlines()[3:]}


def outputs(tmp_path):
    folder = tmp_path / "board"
    data = json.loads((folder / "board.json").read_text())
    with open(folder / "board.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return data, rows, (folder / "board.tex").read_text()


# --- the training logs -----------------------------------------------------------------
def train(data_bin, save_dir, log, *extra):
    """fairseq-train's log, as the command writes it (in this process: conftest.fairseq_in_process)."""
    said = fairseq_in_process("fairseq-train", data_bin, "--user-dir", REPO_ROOT / "fairseq_relpos",
                              "--arch", "transformer_rel", *TINY_TRAIN_ARGS, "--save-dir", save_dir, "--cpu", *extra)
    with open(log, "a") as f:  # as the recipes keep train.log: appended when resumed
        f.write(said)


@pytest.mark.slow
def test_rate_and_updates_come_from_real_fairseq_train_logs(reversal_data_bin, protocol, tmp_path, capsys):
    """Seed 1 trains 12 updates at lr 2e-3; seed 2 trains 12, then is resumed to 20: its log
    has two configurations and goes on counting, so its last num_updates is what it took."""
    logs = [tmp_path / "seed1.log", tmp_path / "seed2.log"]
    train(reversal_data_bin, tmp_path / "s1", logs[0], "--lr", "2e-3", "--max-update", 12)
    train(reversal_data_bin, tmp_path / "s2", logs[1], "--lr", "2e-3", "--max-update", 12, "--seed", 2)
    train(reversal_data_bin, tmp_path / "s2", logs[1], "--lr", "2e-3", "--max-update", 20, "--seed", 2)
    lines = [log.read_text().splitlines() for log in logs]
    info = training_info(lines)
    assert info.learning_rate == (0.002,)
    assert info.updates.values == (12, 20)
    assert info.parameters > 0

    assert leaderboard.main(board_args(protocol, tmp_path, "--train-log", f"rel={logs[0]},{logs[1]}")) == 0
    rel = board_lines(capsys.readouterr().out)["rel"]
    assert rel.startswith("| 1 | rel | 2e-3 | 16 ± 6 | ")
    data, rows, _ = outputs(tmp_path)
    record = next(r for r in data["records"] if r["system"] == "rel" and r["set"] == "beyond")
    assert record["learning_rate"] == [0.002] and record["updates_seeds"] == [12, 20]
    assert {r["learning_rate"] for r in rows if r["system"] == "rel"} == {"0.002"}

    # another seed at another rate is no seed of the same system: seed 1's log as a training
    # at 5e-4 would have written it (the rate is in the configuration fairseq-train logs)
    other = logs[0].read_text()
    assert other.count("'optimization': {") == 1
    head, tail = other.split("'optimization': {")
    (tmp_path / "other.log").write_text(head + "'optimization': {" + tail.replace("'lr': [0.002]", "'lr': [0.0005]", 1))
    assert leaderboard.main(board_args(protocol, tmp_path, "--train-log",
                                       f"rel={logs[0]},{tmp_path / 'other.log'}")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --train-log rel: the training logs of one system disagree on its "
                          "learning rate: [0.0005] and [0.002]"), err


# --- within, beyond, retention, learned ------------------------------------------------
def test_bleu_within_the_limit_and_the_retention_are_each_seeds_sacrebleu_scores(protocol, tmp_path, capsys):
    refs, systems = protocol
    assert leaderboard.main(board_args(protocol, tmp_path)) == 0
    capsys.readouterr()
    data, _, _ = outputs(tmp_path)
    within = [i for i, ref in enumerate(refs) if len(ref.split()) <= LIMIT]
    beyond = [i for i, ref in enumerate(refs) if len(ref.split()) > LIMIT]

    def bleu(hyps, indices):
        return BLEU(tokenize="none").corpus_score([hyps[i] for i in indices], [[refs[i] for i in indices]]).score

    for name, seeds in systems.items():
        record = {r["set"]: r for r in data["records"] if r["system"] == name}
        expected_within = [bleu(hyps, within) for hyps in seeds]
        assert record["within"]["bleu_seeds"] == pytest.approx(expected_within)
        assert record["within"]["n"] == len(within)
        ratios = [bleu(hyps, beyond) / w for hyps, w in zip(seeds, expected_within)]
        assert record["beyond"]["retention_seeds"] == pytest.approx(ratios)
        assert record["beyond"]["retention"] == pytest.approx(statistics.fmean(ratios))
        assert record["beyond"]["retention_sd"] == pytest.approx(statistics.stdev(ratios))


def test_a_system_that_did_not_learn_the_task_is_listed_apart_unranked(protocol, tmp_path, capsys):
    """slow is second beyond the limit, but below 95 BLEU within it: not ranked on
    extrapolation, in every format; with --learned-threshold 0 it is ranked."""
    assert leaderboard.main(board_args(protocol, tmp_path)) == 0
    table = capsys.readouterr().out
    rows = board_lines(table)
    assert rows["rel"].startswith("| 1 | rel |") and rows["abs"].startswith("| 2 | abs (baseline) |")
    assert rows["slow"].startswith("| – | slow — did not learn |")
    assert list(rows) == ["rel", "abs", "slow"]
    assert "among the systems that learned the task: a mean BLEU of at least 95 within the limit (G0:20)" in table
    data, csv_rows, latex = outputs(tmp_path)
    assert data["learned_threshold"] == 95
    assert {(r["system"], r["rank"], r["learned"]) for r in data["records"]} == {
        ("rel", 1, True), ("abs", 2, True), ("slow", None, False)}
    assert {(r["system"], r["rank"], r["learned"]) for r in csv_rows} == {
        ("rel", "1", "True"), ("abs", "2", "True"), ("slow", "", "False")}
    assert "-- & slow --- did not learn &" in latex

    assert leaderboard.main(board_args(protocol, tmp_path, "--learned-threshold", "0")) == 0
    rows = board_lines(capsys.readouterr().out)
    assert [row.split(" | ")[:2] for row in rows.values()] == [["| 1", "rel"], ["| 2", "slow"], ["| 3", "abs (baseline)"]]
    assert {r["learned"] for r in outputs(tmp_path)[0]["records"]} == {None}


@pytest.mark.parametrize("value", ["-1", "101", "nan"])
def test_a_learned_threshold_that_is_no_bleu_score_is_refused(protocol, tmp_path, capsys, value):
    assert leaderboard.main(board_args(protocol, tmp_path, "--learned-threshold", value)) == 2
    assert "--learned-threshold is a BLEU score from 0 to 100" in capsys.readouterr().err
    assert not (tmp_path / "board").exists()


# --- the difference to the baseline ----------------------------------------------------
def test_the_difference_to_the_baseline_has_the_pooled_tests_bootstrap_interval(protocol, tmp_path, capsys):
    """Recomputed with sacrebleu on the seeds pooled (seed k after seed k-1), resampled
    with the pooled test's own draws (its seed, over the pairs beyond the limit): the
    difference of the pooled scores and sacrebleu's 95% percentile interval of the
    resampled differences."""
    refs, systems = protocol
    assert leaderboard.main(board_args(protocol, tmp_path)) == 0
    table = capsys.readouterr().out
    data, csv_rows, latex = outputs(tmp_path)
    pooled_refs = refs * 2
    beyond = [i for i, ref in enumerate(pooled_refs) if len(ref.split()) > LIMIT]
    draws = bootstrap.resample_indices(len(beyond), 200, 7)

    # sacrebleu's corpus_score of a subset, which sums the sentences' statistics: each
    # sentence's extracted once, each of the 800 subsets aggregated by sacrebleu
    bleu = BLEU(tokenize="none")
    statistics = {name: bleu._extract_corpus_statistics(systems[name][0] + systems[name][1], [pooled_refs])
                  for name in ("abs", "rel", "slow")}

    def pooled_bleu(name, indices):
        return bleu._aggregate_and_compute([statistics[name][i] for i in indices]).score

    for name in ("rel", "slow"):
        differences = sorted(pooled_bleu(name, [beyond[j] for j in draw]) - pooled_bleu("abs", [beyond[j] for j in draw])
                             for draw in draws)
        lower = len(differences) // 40
        expected = (pooled_bleu(name, beyond) - pooled_bleu("abs", beyond),
                    differences[lower], differences[-lower - 1])
        record = next(r for r in data["records"] if r["system"] == name and r["set"] == "beyond")
        assert (record["bleu_diff"], record["bleu_diff_ci_lo"], record["bleu_diff_ci_hi"]) == pytest.approx(expected)
        shown = f"{expected[0]:+.1f} [{expected[1]:+.1f}, {expected[2]:+.1f}]"
        assert board_lines(table)[name].endswith(f"| {shown} |")
        assert f"& {shown} \\\\" in latex
        row = next(r for r in csv_rows if r["system"] == name and r["set"] == "beyond")
        assert float(row["bleu_diff_ci_lo"]) == pytest.approx(expected[1])
    assert all(r["bleu_diff"] is None for r in data["records"] if r["system"] == "abs")
    assert "Δ: BLEU beyond the limit minus abs's, each on its seeds pooled" in table


# --- the learning-rate selection -------------------------------------------------------
def selection(**changes):
    point = {"dev_loss": 2.0, "updates": 900, "failure": None}
    schemes = {name: {"grid": {"1e-3": {**point, "dev_loss": 2.4},
                               "3e-3": dict(point),
                               "1e-2": {"dev_loss": None, "updates": 40, "failure": "diverged (loss nan)"}},
                      "chosen": "3e-3"}
               for name in ERRORS}
    schemes["slow"]["grid"]["1e-3"]["dev_loss"] = 1.5
    schemes["slow"]["chosen"] = "1e-3"
    data = {"metric": "dev loss (pairs within the limit)", "schemes": schemes}
    for path, value in changes.items():  # "schemes/rel/chosen": value; None as the value deletes
        *parents, key = path.split("/")
        target = data
        for parent in parents:
            target = target[parent]
        if value is None:
            del target[key]
        else:
            target[key] = value
    return data


def test_the_selection_is_a_table_and_only_then_is_the_rate_called_chosen(protocol, tmp_path, capsys):
    assert leaderboard.main(board_args(protocol, tmp_path)) == 0
    table = capsys.readouterr().out
    assert "chosen" not in table and "Learning rate chosen" not in table
    assert "lr: the learning rate of the training logs." in table
    assert outputs(tmp_path)[0]["tuning"] is None

    path = tmp_path / "tuning.json"
    path.write_text(json.dumps(selection()))
    assert leaderboard.main(board_args(protocol, tmp_path, "--tuning", str(path))) == 0
    table = capsys.readouterr().out
    assert "| rank | system | chosen lr |" in table
    assert "Chosen lr: the learning rate chosen per scheme on dev loss (pairs within the limit), never on the test sets" in table
    selection_table = table[table.index("## Learning rate chosen on dev loss (pairs within the limit)"):]
    assert "| scheme | lr 1e-3 | lr 3e-3 | lr 1e-2 | chosen |" in selection_table
    assert "| rel | 2.400 (900) | **2.000 (900)** | failed (40) | 3e-3 |" in selection_table
    assert "| slow | **1.500 (900)** | 2.000 (900) | failed (40) | 1e-3 |" in selection_table
    assert "Failed: rel at 1e-2: diverged (loss nan); abs at 1e-2" in selection_table
    # rel's 3e-3 is inside its grid (the larger rate failed); slow's 1e-3 is its smallest
    assert ("At the edge of the grid: slow (its smallest rate). The best rate may lie beyond it: "
            "a grid reaching further would tell.") in selection_table
    data, _, latex = outputs(tmp_path)
    assert data["tuning"] == selection()
    assert "\\textbf{1.500 (900)}" in latex


@pytest.mark.parametrize("change, message", [
    ("not json", "not JSON (Expecting property name enclosed in double quotes, line 1 column 2)"),
    ({"schemes": None}, "the file has no 'schemes'"),
    ({"schemes/rel/grid/3e-3/dev_loss": None}, "schemes.rel.grid.3e-3 has no 'dev_loss'"),
    ({"schemes/rel/grid/3e-3/dev_loss": "low"}, "schemes.rel.grid.3e-3.dev_loss is 'low'; expected a finite number or null"),
    ({"schemes/rel/grid/3e-3/updates": 2.5}, "schemes.rel.grid.3e-3.updates is 2.5; expected a count of updates"),
    ({"schemes/rel/grid/fast": {"dev_loss": 1, "updates": 1, "failure": None}},
     "schemes.rel.grid has the key 'fast', which is no learning rate"),
    ({"schemes/rel/grid/0.003": {"dev_loss": 1, "updates": 1, "failure": None}}, "schemes.rel.grid spells one rate twice"),
    ({"schemes/rel/chosen": "3e-4"}, "schemes.rel.chosen is '3e-4'; expected one of its grid's rates (1e-3, 3e-3, 1e-2) or null"),
    ({"schemes/rel/chosen": "1e-3"}, "schemes.rel.chosen is 1e-3 (dev loss 2.4), but 3e-3 has the lowest dev loss (2)"),
    ({"schemes/rel/chosen": "1e-2"}, "schemes.rel.chosen is 1e-2, whose training has no dev loss"),
    ({"schemes/rel/chosen": None}, "schemes.rel has no 'chosen'"),
    ({"schemes/rel/grid/3e-3": {"dev_loss": None, "updates": 3, "failure": None}},
     "schemes.rel.grid.3e-3 has neither a dev_loss nor a failure"),
    ({"schemes/rope": selection()["schemes"]["rel"]}, "tunes rope, which is no --system or --failed"),
    ({"schemes/slow": None}, "has no entry for slow"),
])
def test_a_malformed_selection_is_refused_by_name(protocol, tmp_path, capsys, change, message):
    path = tmp_path / "tuning.json"
    path.write_text("{oops" if change == "not json" else json.dumps(selection(**change)))
    assert leaderboard.main(board_args(protocol, tmp_path, "--tuning", str(path))) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --tuning {path}") and message in err, err
    assert not (tmp_path / "board").exists()


def test_training_logs_at_another_rate_than_the_chosen_one_are_refused(protocol, tmp_path, capsys):
    log = ["2026 | INFO | fairseq_cli.train | {'optimization': {'max_epoch': 0, 'lr': [0.001]}, "
           "'optimizer': {'lr': [0.001]}}",
           "2026 | INFO | train | epoch 001 | loss 5.9 | ups 5.42 | num_updates 3 | lr 0.0003"]
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps(selection()))
    args = board_args(protocol, tmp_path, "--tuning", str(path), "--train-log", f"rel={write(tmp_path / 'rel.log', log)}")
    assert leaderboard.main(args) == 2
    assert capsys.readouterr().err == f"error: --train-log rel: trained at lr 0.001, but --tuning {path} chose 3e-3 for rel\n"
    # the rate the updates ran with is the configuration's, not the scheduler's current one
    assert training_info([log]).learning_rate == (0.001,)


def test_a_scheme_whose_every_rate_failed_and_no_resampling(protocol, tmp_path, capsys):
    """A scheme none of whose rates trained is on the board as failed and in the selection
    with no rate chosen; without resampling there is no difference to show."""
    data = selection(**{"schemes/huang3": {"grid": {"1e-3": {"dev_loss": None, "updates": 2, "failure": "diverged"}},
                                           "chosen": None}})
    path = tmp_path / "tuning.json"
    path.write_text(json.dumps(data))
    args = board_args(protocol, tmp_path, "--tuning", str(path), "--failed", "huang3=no rate of the grid trained")
    args[args.index("--bootstrap") + 1] = "0"
    assert leaderboard.main(args) == 0
    table = capsys.readouterr().out
    assert "| huang3 | failed (2) | – | – | none: every rate failed |" in table
    assert "Failed: rel at 1e-2: diverged (loss nan); abs at 1e-2: diverged (loss nan); slow at 1e-2: " \
           "diverged (loss nan); huang3 at 1e-3: diverged." in table  # in the board's order
    assert board_lines(table)["huang3"].startswith("| – | huang3 — failed: no rate of the grid trained |")
    assert board_lines(table)["rel"].endswith("| – |")  # no resampling: no difference
