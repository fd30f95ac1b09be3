"""The SCAN recipe (scripts/reproduce/scan.sh, relpos_recipes.graphs.scan): its plan in-process
(the splits, what each step reads and runs, one model per seed at Csordas et al.'s settings,
greedy and oracle-length decoding, the boards by exact match), the scan tool's parallel
corpus, and one SMOKE=1 run end to end."""
import json
import os
import subprocess
import warnings

import pytest

from conftest import REPO_ROOT
from relpos_recipes.engine import StepError
from relpos_recipes.graphs.scan import scan_plan
from relpos_recipes.tools import scan as scan_tool


def words(step):
    return [str(part) for part in step.argv()]


def option(argv, name):
    return argv[argv.index(name) + 1]


@pytest.fixture
def plan(tmp_path, monkeypatch):
    monkeypatch.delenv("SMOKE", raising=False)

    def make(*argv):
        return scan_plan([*argv, "--out-dir", str(tmp_path / "run")])[1]

    return make


def test_a_model_per_system_and_seed_at_the_published_settings(plan, tmp_path):
    scan = plan("--split", "cutoff:26", "--systems", "transformer_abs,transformer_xl", "--seeds", "3",
                "--updates", "1000")
    graph = scan.graph()
    assert [job.name for job in graph.jobs] == ["cutoff26-data", "cutoff26-transformer_abs",
                                                "cutoff26-transformer_xl", "cutoff26-board", "summary"]
    trainings = [step for job in graph.jobs for step in job.steps if step.name == "train"]
    assert len(trainings) == 6 and len({step.home for step in trainings}) == 6
    argv = words(trainings[0])
    assert trainings[0].home == tmp_path / "run" / "cutoff26" / "models" / "transformer_abs-seed1"
    for name, value in [("--encoder-layers", "3"), ("--decoder-layers", "3"), ("--encoder-embed-dim", "128"),
                        ("--encoder-attention-heads", "8"), ("--encoder-ffn-embed-dim", "256"),
                        ("--dropout", "0.5"), ("--batch-size", "256"), ("--lr", "1e-3"), ("--lr-scheduler", "fixed"),
                        ("--clip-norm", "5"), ("--max-update", "1000"), ("--seed", "1")]:
        assert option(argv, name) == value, name
    # the last --label-smoothing is fairseq's: plain cross-entropy
    assert argv[len(argv) - 1 - argv[::-1].index("--label-smoothing") + 1] == "0"
    assert {option(words(step), "--seed") for step in trainings} == {"1", "2", "3"}
    data = tmp_path / "run" / "cutoff26" / "data"
    assert option(argv, "fairseq-train") == str(data / "data-bin" / "len26" / "shard0")


def test_each_model_decodes_greedily_and_at_the_oracle_length(plan, tmp_path):
    scan = plan("--split", "length", "--systems", "transformer_abs", "--seeds", "1")
    steps = [step for step in scan.graph().job("length-transformer_abs").steps if step.name == "translate"]
    assert [step.home.name for step in steps] == ["test", "test.oracle"]
    for step in steps:
        argv = words(step)
        generate = argv[argv.index("fairseq-generate"):]
        assert generate[len(generate) - 1 - generate[::-1].index("--beam") + 1] == "1"
    assert "--oracle-length" in words(steps[1]) and "--oracle-length" not in words(steps[0])


def test_the_last_checkpoint_translates_by_default_and_the_best_one_beside_it(plan, tmp_path):
    last, best = (plan("--split", "cutoff:26", "--systems", "transformer_abs,transformer_xl", "--seeds", "2",
                       *checkpoint) for checkpoint in ((), ("--checkpoint", "best")))
    model = tmp_path / "run" / "cutoff26" / "models" / "transformer_xl-seed2"

    def translations(scan):
        steps = [step for step in scan.graph().job("cutoff26-transformer_xl").steps if step.name == "translate"]
        return {(step.home, option(words(step), "--path")) for step in steps if model in step.home.parents}

    assert translations(best) == {(model / "test", str(model / "checkpoint_best.pt")),
                                  (model / "test.oracle", str(model / "checkpoint_best.pt"))}
    assert translations(last) == {(model / "last" / "test", str(model / "checkpoint_last.pt")),
                                  (model / "last" / "test.oracle", str(model / "checkpoint_last.pt"))}
    # the training is the same step: switching reuses the model and keeps the best one's translations
    train = [[step for step in scan.graph().job("cutoff26-transformer_xl").steps if step.name == "train"]
             for scan in (best, last)]
    assert [words(step) for step in train[0]] == [words(step) for step in train[1]]
    board = words(last.graph().job("cutoff26-board").steps[0])
    systems = dict(value.split("=", 1) for k, value in enumerate(board) if board[k - 1] == "--system")
    assert systems["transformer_xl"].split(",")[1] == str(model / "last" / "test" / "hyp.txt")
    assert systems["transformer_xl-oracle"].split(",")[1] == str(model / "last" / "test.oracle" / "hyp.txt")
    logs = dict(value.split("=", 1) for k, value in enumerate(board) if board[k - 1] == "--train-log")
    assert logs["transformer_xl"].split(",")[1] == str(model / "train.log")
    assert "the last checkpoint" in option(board, "--title")
    assert option(words(last.graph().job("summary").steps[0]), "--checkpoint") == "last"
    assert option(words(best.graph().job("summary").steps[0]), "--checkpoint") == "best"


def test_the_data_is_generated_and_prepared_without_subwords(plan, tmp_path):
    scan = plan("--split", "length", "--systems", "transformer_abs")
    steps = scan.graph().job("length-data").steps
    generate = steps[0]
    argv = words(generate)
    assert "relpos_recipes.tools.scan" in argv and option(argv, "--split") == "length" and "--parallel" in argv
    assert "--every" not in argv
    data = tmp_path / "run" / "length" / "data"
    env = next(step for step in steps if step.name == "segmentation.env")
    assert {"TEXTPROC=none", "SEG=none", "SRC=in", "TGT=out"} <= set(words(env))
    take = next(step for step in steps if step.name == "split.train")
    assert str(data / "scan" / "train.in") in words(take)
    names = {step.name for step in steps}
    assert {"dict", "filter.len22", "bin.len22"} <= names  # the length split's limit: 22 actions


def test_the_board_ranks_by_exact_match_by_the_references_actions(plan, tmp_path):
    scan = plan("--cutoffs", "22,26", "--split", "length", "--systems", "transformer_abs,transformer_rel",
                "--seeds", "2")
    assert [split.name for split in scan.splits] == ["length", "cutoff22", "cutoff26"]
    graph = scan.graph()
    argv = words(graph.job("cutoff26-board").steps[0])
    for name, value in [("--metrics", "bleu,ter,exact"), ("--rank-by", "exact"), ("--length-by", "reference"),
                        ("--baseline", "transformer_abs"), ("--train-limit", "26"), ("--edges", "26,37"),
                        ("--tokenize", "none")]:
        assert option(argv, name) == value, name
    systems = [value for k, value in enumerate(argv) if argv[k - 1] == "--system"]
    assert [s.split("=")[0] for s in systems] == ["transformer_abs", "transformer_rel", "transformer_abs-oracle",
                                                   "transformer_rel-oracle"]
    assert len(systems[0].split(",")) == 2  # one translation per seed
    summary = words(graph.job("summary").steps[0])
    boards = [value for k, value in enumerate(summary) if summary[k - 1] == "--board"]
    assert boards == [f"{name}={limit}={tmp_path / 'run' / name / 'board' / 'board.json'}"
                      for name, limit in (("length", 22), ("cutoff22", 22), ("cutoff26", 26))]


def test_checkpoints_along_the_way_are_each_decoded_and_scored_against_updates(plan, tmp_path):
    """--checkpoint-every K: each training saves a checkpoint every K updates; once the trainings
    have run, each checkpoint fairseq saved is decoded freely and at the oracle length, and one
    step scores them all against the updates."""
    assert all("--save-interval-updates" not in words(step) for job in plan("--split", "length").graph().jobs
               for step in job.steps)
    scan = plan("--split", "cutoff:26", "--systems", "transformer_abs,transformer_xl", "--seeds", "2",
                "--updates", "3000", "--checkpoint-every", "1000")
    graph = scan.graph()
    xl, board = graph.job("cutoff26-transformer_xl"), graph.job("cutoff26-board")
    assert all(option(words(step), "--save-interval-updates") == "1000" for step in xl.steps if step.name == "train")
    assert board.waits_for == [graph.job("cutoff26-transformer_abs"), xl]
    models = tmp_path / "run" / "cutoff26" / "models"
    assert xl.later.build() == []  # nothing trained yet
    # what fairseq saved: epoch 15 ended at update 1000 (its epoch checkpoint, not kept, stands there)
    for name in ("checkpoint_8_1000.pt", "checkpoint_31_2000.pt", "checkpoint_46_3000.pt"):
        (models / "transformer_xl-seed1").mkdir(parents=True, exist_ok=True)
        (models / "transformer_xl-seed1" / name).write_bytes(b"")
    (models / "transformer_xl-seed2").mkdir(parents=True)
    for name in ("checkpoint_46_3000.pt", "checkpoint_best.pt", "checkpoint_last.pt", "checkpoint46.pt"):
        (models / "transformer_xl-seed2" / name).write_bytes(b"")
    translations = [step for step in xl.later.build() if step.name == "translate"]
    assert [(step.home.relative_to(models)).as_posix() for step in translations] == [
        f"transformer_xl-seed{seed}/updates/{updates}/{decoding}"
        for seed, updates in ((1, 1000), (1, 2000), (1, 3000), (2, 3000)) for decoding in ("test", "test.oracle")]
    assert [option(words(step), "--path") for step in translations[::2]] == [
        str(models / "transformer_xl-seed1" / "checkpoint_8_1000.pt"),
        str(models / "transformer_xl-seed1" / "checkpoint_31_2000.pt"),
        str(models / "transformer_xl-seed1" / "checkpoint_46_3000.pt"),
        str(models / "transformer_xl-seed2" / "checkpoint_46_3000.pt")]
    assert "--oracle-length" in words(translations[1]) and "--oracle-length" not in words(translations[0])
    (updates,) = board.later.build()
    argv = words(updates)
    assert "relpos_recipes.tools.scan_updates" in argv
    assert option(argv, "--ref") == str(tmp_path / "run" / "cutoff26" / "data" / "testsets" / "test" / "raw.out")
    given = [value for k, value in enumerate(argv) if argv[k - 1] == "--translation"]
    seed2 = models / "transformer_xl-seed2" / "updates" / "3000"
    assert given[-1] == f"transformer_xl=2=3000={seed2 / 'test' / 'hyp.txt'}={seed2 / 'test.oracle' / 'hyp.txt'}"
    assert len(given) == 4 and set(updates.inputs) >= {seed2 / "test" / "hyp.txt", seed2 / "test.oracle" / "hyp.txt"}
    assert updates.home == tmp_path / "run" / "cutoff26" / "updates"


def test_exact_match_against_updates_over_the_seeds_that_saved_a_checkpoint(tmp_path, capsys):
    from relpos_recipes.tools import scan_updates

    (tmp_path / "ref").write_text("a b\nc\nd d d\ne\n")

    def hyp(name, *lines):
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))
        return tmp_path / name

    hyp("all", "a b", "c", "d d d", "e")
    hyp("half", "a b", "c", "d d", "e e")
    hyp("none", "a", "", "d", "f")
    spec = [("rel", 1, 1000, "half", "all"), ("rel", 2, 1000, "all", "all"), ("rel", 1, 2000, "all", "all"),
            ("abs", 1, 1000, "none", "half")]
    scan_updates.main(["--ref", str(tmp_path / "ref"), "--out-dir", str(tmp_path / "out"), "--title", "T"]
                      + [a for system, seed, updates, free, oracle in spec
                         for a in ("--translation", f"{system}={seed}={updates}={tmp_path / free}={tmp_path / oracle}")])
    record = json.loads((tmp_path / "out" / "updates.json").read_text())
    assert record["test_pairs"] == 4 and list(record["systems"]) == ["rel", "abs"]
    first, second = record["systems"]["rel"]
    assert first["updates"] == 1000 and first["free"]["seeds"] == [1, 2] and first["free"]["values"] == [50.0, 100.0]
    assert first["free"]["mean"] == 75.0 and first["free"]["sd"] == pytest.approx(35.3553, abs=1e-4)
    assert second == {"updates": 2000, "free": {"mean": 100.0, "sd": 0.0, "seeds": [1], "values": [100.0]},
                      "oracle": {"mean": 100.0, "sd": 0.0, "seeds": [1], "values": [100.0]}}
    assert record["systems"]["abs"][0]["oracle"]["mean"] == 50.0
    out = capsys.readouterr().out
    assert "| 1,000 | 75.0 ± 35.4 / 100.0 ± 0.0 (n=2) | 0.0 ± 0.0 / 50.0 ± 0.0 (n=1) |" in out
    assert "| 2,000 | 100.0 ± 0.0 / 100.0 ± 0.0 (n=1) | — |" in out
    assert (tmp_path / "out" / "updates.png").read_bytes().startswith(b"\x89PNG")
    hyp("short", "a b", "c")
    with pytest.raises(SystemExit, match="short: 2 lines, but --ref has 4"):
        scan_updates.main(["--ref", str(tmp_path / "ref"), "--out-dir", str(tmp_path / "x"),
                           "--translation", f"rel=1=5={tmp_path / 'short'}={tmp_path / 'all'}"])
    with pytest.raises(SystemExit, match="rel=1=5 is given twice"):
        scan_updates.main(["--ref", str(tmp_path / "ref"), "--out-dir", str(tmp_path / "x")]
                          + ["--translation", f"rel=1=5={tmp_path / 'all'}={tmp_path / 'all'}"] * 2)


def test_smoke_shrinks_the_data_the_model_and_the_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("SMOKE", "1")
    args, scan = scan_plan(["--split", "cutoff:26", "--out-dir", str(tmp_path)])
    graph = scan.graph()
    assert option(words(graph.job("cutoff26-data").steps[0]), "--every") == "40"
    argv = words(next(step for step in graph.job("cutoff26-transformer_abs").steps if step.name == "train"))
    assert option(argv, "--encoder-layers") == "1" and option(argv, "--max-update") == "20"
    assert option(argv, "--batch-size") == "32"


@pytest.mark.parametrize("argv, message", [
    ([], "--split length|cutoff:C or --cutoffs"),
    (["--split", "all"], "--split all has no test set"),
    (["--split", "cutoff:48"], "1 to 47"),
    (["--split", "cutoffs:26"], "expected 'length', 'all' or 'cutoff:C'"),
    (["--cutoffs", "22,x"], "--cutoffs: expected a positive integer"),
    (["--split", "length", "--updates", "500", "--checkpoint-every", "1000"],
     "--checkpoint-every 1000 keeps no checkpoint within --updates 500"),
])
def test_bad_splits_are_refused(plan, argv, message):
    with pytest.raises(StepError, match=message):
        plan(*argv)


def test_the_parallel_corpus_of_each_split(tmp_path):
    scan_tool.main(["--split", "length", "--parallel", "--out-dir", str(tmp_path / "length")])
    read = {path.name: path.read_text().splitlines() for path in (tmp_path / "length").iterdir()}
    assert (len(read["train.in"]), len(read["test.in"])) == (16990, 3920)
    train = set(zip(read["train.in"], read["train.out"]))
    assert set(zip(read["dev.in"], read["dev.out"])) <= train  # the length split's dev set stays in training
    assert 1500 < len(read["dev.in"]) < 1900
    assert max(len(actions.split()) for actions in read["train.out"]) == 22
    assert min(len(actions.split()) for actions in read["test.out"]) == 24
    scan_tool.main(["--split", "cutoff:26", "--parallel", "--every", "10", "--out-dir", str(tmp_path / "c26")])
    part = {name: (tmp_path / "c26" / f"{name}.out").read_text().splitlines() for name in ("train", "dev", "test")}
    whole = scan_tool.cutoff_split(scan_tool.all_pairs(), 26)
    assert {name: len(lines) for name, lines in part.items()} == {name: -(-len(pairs) // 10)
                                                                  for name, pairs in whole.items()}
    with pytest.raises(SystemExit):
        scan_tool.main(["--split", "length", "--every", "10", "--out-dir", str(tmp_path / "x")])
    with pytest.raises(SystemExit):
        scan_tool.main(["--split", "all", "--parallel", "--out-dir", str(tmp_path / "y")])


@pytest.mark.slow
def test_smoke_run_end_to_end(tmp_path):
    """SMOKE=1 scan.sh on one cutoff, one system, one seed: the data, the model, both decodings, the
    board by exact match, the summary's record and figure, and its checkpoint of every 8 updates
    scored against updates."""
    out = tmp_path / "scan"
    proc = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "reproduce" / "scan.sh"), "--split", "cutoff:36",
                           "--systems", "transformer_abs", "--seeds", "1", "--updates", "8", "--checkpoint-every", "8",
                           "--out-dir", str(out)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "SMOKE": "1"})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert f"summary: {out / 'summary'}" in proc.stdout
    board = json.loads((out / "cutoff36" / "board" / "board.json").read_text())
    beyond = {r["system"]: r for r in board["records"] if r["set"] == "beyond"}
    assert set(beyond) == {"transformer_abs", "transformer_abs-oracle"}
    assert beyond["transformer_abs"]["rank"] == 1 and beyond["transformer_abs"]["exact_seeds"] is not None
    record = json.loads((out / "summary" / "scan.json").read_text())
    assert record["systems"] == ["transformer_abs"] and record["seeds"] == [1] and record["updates"] == 8
    (split,) = record["splits"]
    assert split["split"] == "cutoff36" and split["train_limit"] == 36
    assert split["test_pairs"] == -(-sum(len(a) > 36 for _, a in scan_tool.all_pairs()) // 40)
    assert set(split["exact"]["transformer_abs"]) == {"free", "oracle"}
    assert (out / "summary" / "exact.png").read_bytes().startswith(b"\x89PNG")
    # the checkpoint of the last update (mid-epoch), decoded both ways and scored against updates
    (point,) = json.loads((out / "cutoff36" / "updates" / "updates.json").read_text())["systems"]["transformer_abs"]
    assert point["updates"] == 8 and point["free"]["seeds"] == [1] and point["oracle"]["seeds"] == [1]
    # the board's translations are the last checkpoint's, the model of those 8 updates
    assert record["checkpoint"] == "last" and point["free"]["values"] == [beyond["transformer_abs"]["exact_seeds"][0]]
    assert (out / "cutoff36" / "models" / "transformer_abs-seed1" / "last" / "test.oracle" / "hyp.txt").is_file()


def test_the_summary_gathers_each_splits_exact_match_free_and_oracle(tmp_path, capsys):
    from relpos_recipes.tools import scan_curve

    def board(name, abs_free, rel_free):
        def record(system, values, oracle_of=None):
            return {"system": system, "set": "beyond", "oracle_of": oracle_of, "n": 100, "exact": sum(values) / 2,
                    "exact_sd": 1.0, "exact_seeds": values, "exact_diff": None if system == "abs" else 5.0,
                    "exact_diff_ci_lo": 1.0, "exact_diff_ci_hi": 9.0}
        records = [record("abs", abs_free), record("rel", rel_free), record("abs-oracle", [50.0, 60.0], "abs"),
                   record("rel-oracle", [90.0, 100.0], "rel"), {"system": "abs", "set": "G0:26", "exact": None}]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"baseline": "abs", "records": records}))
        return f"{name}={name.removeprefix('cutoff') if name != 'length' else 22}={path}"

    specs = [board("length", [0.0, 2.0], [10.0, 20.0]), board("cutoff26", [0.0, 0.0], [100.0, 98.0])]
    scan_curve.main([a for spec in specs for a in ("--board", spec)]
                    + ["--seeds", "1,2", "--updates", "500", "--checkpoint", "best", "--out-dir", str(tmp_path / "out")])
    record = json.loads((tmp_path / "out" / "scan.json").read_text())
    assert record["systems"] == ["abs", "rel"] and record["seeds"] == [1, 2] and record["baseline"] == "abs"
    cutoff = record["splits"][1]
    assert (cutoff["split"], cutoff["train_limit"], cutoff["test_pairs"]) == ("cutoff26", 26, 100)
    assert cutoff["exact"]["rel"]["free"]["mean"] == 99.0 and cutoff["exact"]["rel"]["oracle"]["seeds"] == [90.0, 100.0]
    assert cutoff["exact"]["rel"]["free"]["difference_ci"] == [1.0, 9.0]
    assert "| cutoff26 | 26 | 100 | rel | 99.0 ± 1.0 | +5.0 [+1.0, +9.0] | 95.0 ± 1.0 |" in capsys.readouterr().out
    assert (tmp_path / "out" / "exact.png").read_bytes().startswith(b"\x89PNG")
    assert record["checkpoint"] == "best" and "2 seed(s), 500 updates, the checkpoint of the best dev" in \
        (tmp_path / "out" / "scan.md").read_text()
    scan_curve.main(["--board", specs[0], "--seeds", "1,2", "--updates", "500", "--checkpoint", "last",
                     "--out-dir", str(tmp_path / "last")])
    assert json.loads((tmp_path / "last" / "scan.json").read_text())["checkpoint"] == "last"
    assert "500 updates, the last checkpoint" in (tmp_path / "last" / "scan.md").read_text()
    # the length split alone: its squares carry the legend (matplotlib warns of a legend without labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scan_curve.figure(json.loads((tmp_path / "last" / "scan.json").read_text()))
    (tmp_path / "bleu.json").write_text(json.dumps({"records": [{"system": "abs", "set": "beyond", "bleu": 1}]}))
    with pytest.raises(SystemExit, match="--metrics ...,exact"):
        scan_curve.main(["--board", f"x=26={tmp_path / 'bleu.json'}", "--seeds", "1", "--updates", "1", "--checkpoint", "last",
                         "--out-dir", str(tmp_path / "no")])
