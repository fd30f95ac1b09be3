"""The recipes' command lines (scripts/*.sh over python -m relpos_recipes): bad options are refused
up front, naming the option and what it expects, before any folder is made; a folder no run
made is refused, never deleted; a folder is used by one run at a time; every script has its
--help.  What the options make of a recipe's plan, in-process (recipe_graphs.py)."""
import os
import re
import subprocess

import pytest

from relpos_recipes.engine import FolderLock, StepError
from relpos_recipes.engine.local import Outcome
from relpos_recipes.graphs.systems import print_outputs
from conftest import REPO_ROOT, run_command
from recipe_graphs import recipe_graph, steps_named, words

REPO = REPO_ROOT
SCRIPTS = REPO / "scripts"
ALL_SCRIPTS = [
    "prepare-wmt19-de-en.sh", "prepare-wmt19-zh-en.sh", "prepare-toy.sh", "demo.sh", "leaderboard.sh",
    "build-test-sets.sh", "train.sh", "prepare-tatoeba.sh", "reproduce/tatoeba.sh",
    "translate.sh", "reproduce/table1.sh", "reproduce/table2.sh", "reproduce/table3.sh",
    "reproduce/table4.sh", "reproduce/table5.sh", "reproduce/scan.sh",
]


def script(name, *args, env=None):
    return run_command(["bash", SCRIPTS / name, *args], env=env, check=False)


@pytest.mark.parametrize("name, args, message", [
    ("demo.sh", ["--threads", "0"], "--threads: expected a positive integer, got '0'"),
    ("demo.sh", ["--threads", "abc"], "--threads: expected a positive integer, got 'abc'"),
    ("demo.sh", ["--threads"], "--threads: expected one argument"),
    ("demo.sh", ["--systems", ","], "--systems: expected comma-separated names, got ','"),
    ("leaderboard.sh", ["--systems", "transformer_abs,,transformer_rel"], "--systems: expected comma-separated names"),
    ("demo.sh", ["--updates", "-5"], "--updates: expected a positive integer, got '-5'"),
    ("demo.sh", ["--bogus"], "unrecognized arguments: --bogus"),
    ("prepare-toy.sh", ["--bpe-merges", "0"], "--bpe-merges: expected a positive integer, got '0'"),
    ("prepare-wmt19-de-en.sh", ["--corpora", "europarl,wikipedia"], "--corpora: unknown corpus wikipedia"),
    ("reproduce/table3.sh", ["--system", "oops"], "--system wants LABEL=ARCH@MAXLEN, got 'oops'"),
    ("reproduce/tatoeba.sh", ["--updates", "x"], "--updates: expected a positive integer, got 'x'"),
    ("leaderboard.sh", ["--lr-grid", "1e-3,0.001"], "--lr-grid: names a learning rate twice: '1e-3,0.001'"),
    ("leaderboard.sh", ["--systems", "transformer_abs", "--scheme-lr-grid", "transformer_rel=1e-3,3e-3"],
     "--scheme-lr-grid: once per scheme, and only for schemes of --systems"),
    ("demo.sh", ["--slurm-time", "2", "--launcher", "slurm", "--slurm-gpus-per-job", "0"],
     "--slurm-time 2 (120 s) is not longer than the 180 s before it at which a training requeues itself"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, name, args, message):
    out = tmp_path / "out"
    folder_option = {"demo.sh": "--out-dir", "leaderboard.sh": "--out-dir", "prepare-toy.sh": "--work-dir",
                     "prepare-wmt19-de-en.sh": "--work-dir", "reproduce/table3.sh": "--runs-root",
                     "reproduce/tatoeba.sh": "--out-dir"}[name]
    proc = script(name, *args, folder_option, out)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert not out.exists()


def test_a_file_where_a_folder_is_expected_is_refused(tmp_path):
    (tmp_path / "a file").write_text("mine\n")
    for name, option in (("demo.sh", "--out-dir"), ("train.sh", "--save-dir"), ("translate.sh", "--out-dir")):
        proc = script(name, option, tmp_path / "a file")
        assert proc.returncode != 0 and f"{option}: expected a folder, but {tmp_path / 'a file'} is a file" in \
            proc.stderr, proc.stderr
    assert (tmp_path / "a file").read_text() == "mine\n"


def test_options_with_an_equals_sign_are_options_as_any_other(tmp_path, monkeypatch):
    """--out-dir=DIR, --updates=N and --train-limit=N are read as their spaced forms are, the
    defaults that depend on --data set after them, once (SMOKE=1 used to replace them)."""
    graph = recipe_graph(monkeypatch, "leaderboard", "--quick", "--systems", "transformer_abs",
                         f"--out-dir={tmp_path / 'board'}", "--updates=150", "--train-limit=20")
    (training,) = steps_named(graph, "train")
    assert training.home == tmp_path / "board" / "leaderboard" / "models" / "transformer_abs-lr3e-3"
    assert "--max-update 150" in words(training)
    assert any("--max-len 20" in words(step) for step in graph.job("prepare").steps)
    steps = [step for job in graph.jobs for step in job.steps]
    assert all(step.home.is_relative_to(tmp_path / "board") for step in steps)


def test_the_quick_leaderboard_trains_at_most_200_updates(monkeypatch):
    graph = recipe_graph(monkeypatch, "leaderboard", "--quick", "--systems", "transformer_abs")
    caps = {re.search(r"--max-update (\d+)", words(step)).group(1) for step in steps_named(graph, "train")}
    assert caps == {"200"}, caps


@pytest.mark.parametrize("char", [",", ":"])
def test_a_folder_fairseq_would_split_is_refused(tmp_path, char):
    out = tmp_path / f"a{char}b"
    proc = script("demo.sh", "--out-dir", out)
    assert proc.returncode != 0 and "fairseq reads as a separator of paths" in proc.stderr
    assert f"--out-dir: '{out}' has a '{char}'" in proc.stderr
    assert not out.exists()


def fairseq_data(folder):
    """What train.sh takes for a fairseq data folder (a dictionary), ahead of any data work."""
    folder.mkdir(parents=True)
    (folder / "dict.src.txt").write_text("w1 1\n")
    return folder


@pytest.mark.parametrize("args, message", [
    (["--precision", "fp16"], "--precision fp16 trains on GPUs only (fairseq's --fp16 needs CUDA), and this training "
                              "runs on the CPU: use --precision fp32"),
    (["--attention-impl", "flex"], "--attention-impl flex trains on GPUs only (FlexAttention has no backward pass on "
                                   "the CPU), and this training runs on the CPU: use --attention-impl reference"),
])
def test_train_refuses_on_the_cpu_what_fairseq_would_refuse_after_the_data_work(tmp_path, args, message):
    proc = script("train.sh", "--data", fairseq_data(tmp_path / "data"), "--arch", "transformer_t5", "--save-dir",
                  tmp_path / "model", "--gpus", "0", *args)
    assert proc.returncode != 0 and f"error: {message}" in proc.stderr, proc.stderr
    assert not (tmp_path / "model").exists()


def test_paths_fairseq_would_split_are_refused_by_name_with_the_working_directory(tmp_path):
    """fairseq splits data and checkpoint paths at ':': a ':' in --data, --testset, --checkpoint,
    or in the working directory a relative one starts from, is refused before any work."""
    data = fairseq_data(tmp_path / "a:b" / "data")
    proc = script("train.sh", "--data", data, "--arch", "transformer_t5", "--save-dir", tmp_path / "model")
    assert proc.returncode != 0 and f"--data: '{data}' has a ':', which fairseq reads as a separator of paths" in \
        proc.stderr, proc.stderr
    proc = run_command(["bash", SCRIPTS / "train.sh", "--data", "data", "--arch", "transformer_t5", "--save-dir",
                        tmp_path / "model"], check=False, cwd=tmp_path / "a:b")
    assert proc.returncode != 0 and (f"--data: 'data' is relative to the working directory {tmp_path / 'a:b'}, whose "
                                     "':' fairseq reads as a separator of paths") in proc.stderr, proc.stderr
    proc = run_command(["bash", SCRIPTS / "translate.sh", "--checkpoint", "checkpoint_best.pt", "--testset",
                        tmp_path / "test", "--out-dir", tmp_path / "out"], check=False, cwd=tmp_path / "a:b")
    assert proc.returncode != 0 and "--checkpoint: 'checkpoint_best.pt' is relative to the working directory" in \
        proc.stderr, proc.stderr
    assert not [path for path in tmp_path.rglob("*") if path.name in ("model", "out", ".steps")]


@pytest.mark.slow
def test_a_failed_fairseq_train_says_its_error_on_the_last_line(tmp_path):
    proc = script("train.sh", "--data", fairseq_data(tmp_path / "data"), "--arch", "transformer_t5", "--save-dir",
                  tmp_path / "model", "--gpus", "0", "--no-such-option")
    assert proc.returncode != 0
    assert proc.stderr.splitlines()[-1].endswith("error: fairseq-train failed (exit 2): fairseq-train: error: "
                                                 "unrecognized arguments: --no-such-option"), proc.stderr[-3000:]


def test_a_board_that_was_not_written_ends_the_run_with_why(tmp_path):
    """A local leaderboard (or demo) whose board steps failed (a read-only folder) ended in a
    FileNotFoundError traceback, reading the board it had not written."""
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "board.md").write_text("| the test board |\n")
    outcome = Outcome()
    outcome.failed = {"a grid training": "train failed (exit 1): ...",
                      "the board": "board concat_seq failed (exit 1): PermissionError: [Errno 13] Permission denied"}
    with pytest.raises(StepError, match=re.escape(f"{tmp_path / 'concat_seq' / 'board.md'} was not written: board "
                                                  "concat_seq failed (exit 1): PermissionError: [Errno 13] Permission "
                                                  "denied (2 steps failed, each listed above)")):
        print_outputs(tmp_path, ["test", "concat_seq"], "board.md", "board.md, board.json", outcome)
    with pytest.raises(StepError, match="board.md was not written: the steps that write it did not finish$"):
        print_outputs(tmp_path, ["concat_seq"], "board.md", "board.md, board.json")  # on SLURM, no outcome here


def test_a_folder_in_use_by_another_run_is_refused_by_name(tmp_path):
    work = tmp_path / "toy"
    with FolderLock([work], "bash scripts/prepare-toy.sh (the first run)"):
        proc = script("prepare-toy.sh", "--work-dir", work, "--train-pairs", "50")
    assert proc.returncode != 0
    assert f"{work} is in use by another run (pid {os.getpid()} " in proc.stderr
    assert "the first run" in proc.stderr
    assert sorted(p.name for p in work.iterdir()) == [".steps"]


def test_an_option_given_twice_takes_its_last_value_as_fairseq_does():
    """SMOKE's --max-update 16 followed by TRAIN_EXTRA_ARGS' --max-update 100: fairseq trains
    to 100, so a resumed training is finished only there."""
    from relpos_recipes.tools import option_value

    assert option_value(["--max-update", "16", "--lr", "1", "--max-update=100"], "--max-update") == "100"
    assert option_value(["--lr", "1"], "--max-update") is None


def test_a_system_whose_options_change_its_positions_is_labelled_and_saved_as_what_it_is(tmp_path, monkeypatch):
    """TRAIN_EXTRA_ARGS="--encoder-pos alibi" makes transformer_abs an ALiBi encoder: the
    report calls it so, and it trains into a folder of its own, never transformer_abs's."""
    monkeypatch.setenv("TRAIN_EXTRA_ARGS", "--encoder-pos alibi")
    monkeypatch.delenv("SMOKE", raising=False)
    graph = recipe_graph(monkeypatch, "table3", "--work-root", tmp_path / "w", "--runs-root", tmp_path / "r")
    folders = {step.home.name for step in steps_named(graph, "train")}
    assert any(re.fullmatch(r"transformer_abs-len100-[0-9a-f]{8}", name) for name in folders)
    assert "transformer_abs-len100" not in folders
    (report,) = graph.job("report-table3").later.preview()
    assert "Absolute@100 (transformer_abs[encoder alibi])=" in words(report)


def test_a_folder_the_first_engine_prepared_is_done_after_the_move(tmp_path):
    """tests/data/first-engine-toy.tar.gz: prepare-toy.sh and build-test-sets.sh as the first
    engine ran them (tools under scripts/lib/ and recipes.tools, first manifest format).
    This version finds every step done and runs nothing."""
    import tarfile

    with tarfile.open(REPO_ROOT / "tests" / "data" / "first-engine-toy.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    work = tmp_path / "toy"
    options = ["--work-dir", work, "--train-pairs", "300", "--dev-pairs", "30", "--test-pairs", "20", "--max-len",
               "30", "--bpe-merges", "100", "--threads", "1", "--train-words", "5 20", "--test-words", "5 25"]
    prepared = script("prepare-toy.sh", *options)
    assert prepared.returncode == 0, prepared.stderr
    assert prepared.stderr.count("skip  ") == 22 and "start " not in prepared.stderr
    built = script("build-test-sets.sh", "--work-dir", work, "--threads", "1")
    assert built.returncode == 0, built.stderr
    assert built.stderr.count("skip  ") == 18 and "start " not in built.stderr


def test_an_environment_serving_another_checkout_is_refused_not_taken_over(tmp_path):
    """Two clones, one environment: the second clone's scripts refuse it, naming the clone it
    serves and what to do, instead of re-pointing its editable install while the first runs."""
    other = tmp_path / "other-clone"
    other.mkdir()
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".fairseq-relpos-installed").write_text(f"{other}\n12345 678\n")
    proc = subprocess.run(["bash", "-c", f"source {SCRIPTS / 'lib' / 'env.sh'}"], capture_output=True, text=True,
                          env={**os.environ, "VIRTUAL_ENV": str(venv)})
    assert proc.returncode == 1
    assert f"the environment {venv} serves the checkout {other}" in proc.stderr
    assert "python3 -m venv DIR" in proc.stderr


@pytest.mark.parametrize("script", ALL_SCRIPTS)
def test_help(script):
    text = (SCRIPTS / script).read_text()
    assert "set -euo pipefail" in text
    out = run_command(["bash", SCRIPTS / script, "--help"]).stdout
    assert "Usage:" in out and "--help" in out


@pytest.mark.parametrize("name", ["demo.sh", "leaderboard.sh"])
@pytest.mark.parametrize("gpus, message", [
    ("x", "--gpus: expected the number of GPUs to use (0 for CPU cores only), got 'x'"),
    ("99", "--gpus 99 but torch sees"),
])
def test_demo_and_leaderboard_refuse_gpus_they_do_not_have(name, gpus, message, tmp_path):
    out = tmp_path / "out"
    proc = script(name, "--systems", "transformer_abs", "--gpus", gpus, "--out-dir", out)
    assert proc.returncode != 0 and message in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("name, option, extra", [
    ("prepare-toy.sh", "--work-dir", []),
    ("prepare-wmt19-de-en.sh", "--work-dir", ["--offline"]),
    ("prepare-tatoeba.sh", "--out-dir", ["--download"]),  # the message names the script's own option
])
def test_prepare_refuses_a_folder_it_did_not_make(name, option, extra, tmp_path):
    """Preparing clears temporary files and rewrites its outputs: never in someone else's
    folder.  Corpora placed in raw/ beforehand are welcome."""
    work = tmp_path / "work"
    (work / "raw").mkdir(parents=True)
    (work / "notes.txt").write_text("mine\n")
    (work / "draft.tmp.123").write_text("mine too\n")
    proc = script(name, option, work, *extra)
    assert proc.returncode != 0
    assert f"{option} {work} holds files that no preparation made, such as draft.tmp.123,notes.txt" in proc.stderr
    assert sorted(p.name for p in work.iterdir()) == ["draft.tmp.123", "notes.txt", "raw"]


def test_prepare_refuses_an_empty_max_len(tmp_path):
    proc = script("prepare-toy.sh", "--work-dir", tmp_path / "w", "--max-len", "")
    assert proc.returncode != 0 and "--max-len is empty" in proc.stderr
    assert not (tmp_path / "w" / "data-bin").exists()


def test_table3_checks_architectures_before_any_work(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = script("reproduce/table3.sh", "--work-root", tmp_path / "w", "--runs-root", tmp_path / "r", "--offline",
                  "--local-dir", empty, "--system", "X@100=transformer_bogus@100")
    assert proc.returncode != 0
    assert "--system: unknown architecture transformer_bogus" in proc.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


def test_demo_refuses_duplicate_systems(tmp_path):
    proc = script("demo.sh", "--systems", "transformer_abs,transformer_rel,transformer_abs", "--out-dir",
                  tmp_path / "d")
    assert proc.returncode != 0 and "--systems: names transformer_abs more than once" in proc.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("folder", ["data", "transformer_abs", "report/test"])
def test_demo_deletes_no_folder_it_did_not_make(tmp_path, folder, monkeypatch):
    """demo.sh --out-dir D refuses a folder of D that it did not make, before any work (in-process:
    before its graph is built), and leaves it as it was."""
    out = tmp_path / "d"
    mine = out / folder / "my notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("keep me\n")
    with pytest.raises(StepError, match=re.escape(f"{out / folder} exists and was not made by demo.sh")):
        recipe_graph(monkeypatch, "demo", "--quick", "--systems", "transformer_abs", "--out-dir", out, dry_run=False)
    assert mine.read_text() == "keep me\n"
    assert sorted(p.name for p in out.iterdir()) == [folder.split("/")[0]]


def test_the_refusal_of_a_foreign_folder_names_the_recipe_that_refuses(tmp_path, monkeypatch):
    """SCAN's recipe names itself, not the demo, when its --out-dir holds a summary it did not make."""
    out = tmp_path / "scan"
    mine = out / "summary" / "my notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("keep me\n")
    with pytest.raises(StepError, match=re.escape(f"{out / 'summary'} exists and was not made by reproduce/scan.sh")):
        recipe_graph(monkeypatch, "scan", "--split", "cutoff:26", "--out-dir", out, dry_run=False)
    assert mine.read_text() == "keep me\n"


def test_the_demo_refuses_a_translation_it_did_not_make_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """A user's hyp.txt in OUT/SYSTEM/test/ (a folder the demo made: it has step manifests) is
    refused by name when the run is planned, before any work, as train.sh refuses checkpoints
    no run made."""
    from relpos_recipes.engine.plan import plan

    out = tmp_path / "d"
    (out / "transformer_abs" / ".steps").mkdir(parents=True)
    mine = out / "transformer_abs" / "test" / "hyp.txt"
    mine.parent.mkdir()
    mine.write_text("my translation\n")
    graph = recipe_graph(monkeypatch, "demo", "--quick", "--systems", "transformer_abs", "--out-dir", out)
    with pytest.raises(StepError, match=re.escape(f"{mine.parent} holds hyp.txt that no run of this recipe made")):
        plan(graph)
    assert mine.read_text() == "my translation\n"
