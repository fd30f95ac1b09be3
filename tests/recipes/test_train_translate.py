"""train.sh and translate.sh: their commands (in-process, as --dry-run prints them), what
identifies a translation, and one tiny pipeline in folders whose names have spaces
(prepare-toy.sh, build-test-sets.sh, train.sh of one model, translate.sh) with the faults that
must not give a silent wrong result: checkpoints no run made, of another training, empty or
truncated; a training killed after it finished; test sets of other dictionaries or out of
their preparation; translations never left empty or overwritten."""
import json
import re
import shutil

import pytest

from conftest import run_command as run
from relpos_analysis import fairseq_log
from relpos_recipes.__main__ import main as recipe
from relpos_recipes.engine import StepError
from relpos_recipes.tools.fairseq_generate import write_hypotheses
from test_pipelines import SCRIPTS, lines


def dry_run(capsys, *argv):
    """What `bash scripts/NAME.sh ARGV --dry-run` prints (NAME: argv[0]), in-process."""
    assert recipe([*map(str, argv), "--dry-run"]) == 0
    return capsys.readouterr().out


def test_train_dry_run_has_the_study_optimisation(tmp_path, capsys):
    data = tmp_path / "len100"
    for k in range(8):
        (data / f"shard{k}").mkdir(parents=True)
    out = dry_run(capsys, "train", "--data", data, "--arch", "transformer_rel", "--save-dir", tmp_path / "ck",
                  "--gpus", "1", "--encoder-layers", "1")
    for flag in ["--optimizer adam", "--lr 3e-4", "--lr-scheduler reduce_lr_on_plateau",
                 "--lr-shrink 0.9", "--lr-patience 6", "--warmup-updates 0",
                 "--max-tokens 4700", "--update-freq 1", "--best-checkpoint-metric ppl",
                 "--patience 24", "--max-epoch 160", "--user-dir fairseq_relpos",
                 "--arch transformer_rel", "--fp16", "--encoder-layers 1"]:
        assert flag in out, flag
    assert f"{data}/shard0:{data}/shard1:" in out and f"{data}/shard7 " in out
    # the batch stays 4,700 tokens per update on other GPU counts / accumulation
    out = dry_run(capsys, "train", "--data", data, "--arch", "transformer_abs", "--save-dir", tmp_path / "ck",
                  "--gpus", "2", "--update-freq", "2", "--precision", "amp", "--max-epochs", "5")
    assert "--max-tokens 1175" in out and "--update-freq 2" in out and "--amp" in out
    assert "--distributed-world-size 2" in out and "--max-epoch 40" in out


def test_translate_dry_run(tmp_path, capsys):
    out = dry_run(capsys, "translate", "--checkpoint", tmp_path / "c.pt", "--testset", tmp_path / "ts", "--out-dir",
                  tmp_path / "o", "--beam", "12")
    assert "fairseq-generate" in out and "--beam 12" in out
    assert "--max-len-a 2" in out and "--max-len-b 10" in out




# ----------------------------------------------------------------------------------------
# One tiny pipeline, in folders whose names have spaces: prepare-toy.sh, build-test-sets.sh,
# train.sh (one model), and the faults that must not give a silent wrong result
# ----------------------------------------------------------------------------------------
TOY_PREPARE = ["--train-pairs", "400", "--dev-pairs", "20", "--test-pairs", "12",
               "--train-words", "4 10", "--test-words", "4 16", "--max-len", "30",
               "--bpe-merges", "100", "--threads", "1"]
TOY_MODEL = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
             "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32",
             "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "2",
             "--decoder-attention-heads", "2", "--batch-tokens", "1000", "--max-update", "12",
             "--max-epochs", "100", "--patience", "-1", "--log-interval", "5",
             "--num-workers", "0"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("toy") / "a folder with spaces"
    work = root / "toy data"
    prepare = ["bash", SCRIPTS / "prepare-toy.sh", "--work-dir", work, *TOY_PREPARE]
    run(prepare)
    run(["bash", SCRIPTS / "build-test-sets.sh", "--work-dir", work, "--threads", "1"])
    save = root / "abs model"
    # inverse_sqrt without --warmup-updates: fairseq's default warm-up (it used to get 0);
    # learned source positions: a table that bounds the source length (sinusoids take any)
    train = ["bash", SCRIPTS / "train.sh", "--data", work / "data-bin" / "len30", "--arch",
             "transformer_abs", "--save-dir", save, "--gpus", "0", "--lr-scheduler",
             "inverse_sqrt", "--encoder-pos", "abs_learned", *TOY_MODEL]
    run(train)
    return {"root": root, "work": work, "prepare": prepare, "save": save, "train": train,
            "ckpt": save / "checkpoint_last.pt", "test": work / "testsets" / "test"}


def translate(toy, out, *extra, testset=None, check=True):
    return run(["bash", SCRIPTS / "translate.sh", "--checkpoint", toy["ckpt"], "--testset",
                testset or toy["test"], "--out-dir", out, "--cpu", *extra], check=check)


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_toy_pipeline_in_a_folder_with_spaces(toy):
    """Item: paths with spaces.  Everything above ran in "a folder with spaces"; re-running the
    preparation with another --bpe-merges is refused, and config.env keeps what the data was
    built with."""
    assert (toy["save"] / "checkpoint_best.pt").exists()
    assert json.loads((toy["save"] / ".steps" / "train.json").read_text())["status"] == "done"
    other = [str(c) for c in toy["prepare"]]
    other[other.index("--bpe-merges") + 1] = "120"
    proc = run(other, check=False)
    assert proc.returncode != 0 and "prepared with other settings" in proc.stderr
    assert "SEG_SIZE=100" in (toy["work"] / "segmentation.env").read_text()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_train_inverse_sqrt_gets_a_warm_up(toy, tmp_path):
    """train.sh --lr-scheduler inverse_sqrt trained (the fixture); it no longer passes
    --warmup-updates 0, and an explicit 0 is refused before fairseq divides by it."""
    command = json.loads((toy["save"] / ".steps" / "train.json").read_text())["command"]
    assert "--warmup-updates" not in command and "inverse_sqrt" in command
    proc = run(["bash", SCRIPTS / "train.sh", "--data", toy["work"] / "data-bin" / "len30",
                "--arch", "transformer_abs", "--save-dir", tmp_path / "s", "--lr-scheduler",
                "inverse_sqrt", "--warmup-updates", "0"], check=False)
    assert proc.returncode != 0 and "needs --warmup-updates of at least 1" in proc.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")


def test_a_translation_is_identified_by_its_settings_and_its_test_set(tmp_path):
    """translate.sh into one --out-dir: the same settings are the same translation (reused),
    another beam or another test set another (redone, replacing its outputs: the engine's
    rules, tests/engine/test_steps.py); the model and the test set are its inputs."""
    from relpos_recipes.graphs.training import Translation

    checkpoint = tmp_path / "model" / "checkpoint_best.pt"

    def translation(beam, test_set="test"):
        testset = tmp_path / "data" / "testsets" / test_set
        step, _scores = Translation(checkpoint=checkpoint, testset=testset, out=tmp_path / "out", beam=beam,
                                    cpu=True).steps(("src", "tgt"))
        assert step.name == "translate" and {checkpoint, testset / "bin"} <= set(step.inputs)
        generate = step.argv()[step.argv().index("fairseq-generate"):]
        assert generate[generate.index("--beam") + 1] == beam and generate[1] == str(testset / "bin")
        return step.recorded_identity()

    assert translation("1") == translation("1")
    assert translation("2") != translation("1")
    assert translation("2", "concat_seq") != translation("2")


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_translate_never_leaves_an_untranslated_sentence_empty(toy):
    """A model whose positions are too few for some sources: an error naming the cause, with
    no hypotheses and no temporary files left behind."""
    out = toy["root"] / "too long"
    proc = translate(toy, out, "--max-source-positions", "20", check=False)
    assert proc.returncode != 0 and "a source is longer than the model's positions: sentence" in proc.stderr
    assert not (out / "hyp.txt").exists()
    assert json.loads((out / ".steps" / "translate.json").read_text())["status"] == "failed"
    assert not [p for p in out.iterdir() if ".tmp." in p.name]
    # any other failure of fairseq-generate: its error, on the last line
    proc = translate(toy, out, "--no-such-option", check=False)
    assert proc.returncode != 0 and proc.stderr.splitlines()[-1].endswith(
        "error: fairseq-generate failed (exit 2): fairseq-generate: error: unrecognized arguments: --no-such-option")


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_test_set_out_of_its_preparation_is_refused_saying_why(toy, tmp_path):
    copied = tmp_path / "copied" / "test"
    shutil.copytree(toy["test"], copied)
    proc = translate(toy, tmp_path / "out", testset=copied, check=False)
    assert proc.returncode != 0 and (
        f"error: {copied} is not in a prepared folder: its hypotheses are de-segmented as its preparation says, in "
        f"{tmp_path / 'segmentation.env'}, two folders up (a test set lives in PREPARED/testsets/NAME), which is "
        "missing; translate the test set where build-test-sets.sh made it") in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_pair_too_long_for_the_model_is_refused_naming_its_side():
    """fairseq-generate checks a test pair's source and reference against the model's positions."""
    said = "Exception: Size of sample #3 is invalid (=({}, {})) since max_positions=(20, 16), skip this example with " \
           "--skip-invalid-size-inputs-valid-test"
    assert fairseq_log.too_long(["| INFO | loaded", said.format(30, 4)]) == \
        "a source is longer than the model's positions: sentence 3 has 30 source tokens, beyond its 20"
    assert fairseq_log.too_long([said.format("np.int64(12)", "np.int64(30)")]) == (
        "a reference is longer than the model's positions: sentence 3's reference has 30 target tokens, beyond its "
        "16 (fairseq-generate checks the reference's length too, although it translates without it)")
    assert fairseq_log.too_long(["Size of sample #3"]) is None


def test_the_line_a_failed_fairseq_command_says_why_in():
    traceback = ["2026-11-27 | INFO | fairseq_cli.train | {'_name': None, 'error': 1}\n",
                 "Traceback (most recent call last):\n", '  File "train.py", line 1, in <module>\n',
                 "    raise ValueError('in a frame')\n", "ValueError: --attention-impl flex computes gradients\n"]
    assert fairseq_log.last_error(traceback) == "ValueError: --attention-impl flex computes gradients"
    assert fairseq_log.last_error([*traceback[:4], "AssertionError\n"]) == "AssertionError"
    assert fairseq_log.last_error([*traceback[:4], "Exception: Size of sample #3\n"]) == "Exception: Size of sample #3"
    assert fairseq_log.last_error(["usage: fairseq-train", "fairseq-train: error: unrecognized arguments: --x"]) == \
        "fairseq-train: error: unrecognized arguments: --x"
    assert fairseq_log.last_error(["| INFO | an error rate of 3"]) is None


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_translate_overwrites_no_translation_and_takes_no_test_set_of_other_dictionaries(toy, tmp_path):
    """translate.sh --out-dir DIR refuses a hyp.txt no run made there; a copy of the test set
    whose target dictionary numbers two words the other way round is refused by name, before
    any work, as is one of another size."""
    mine = tmp_path / "mine" / "hyp.txt"
    mine.parent.mkdir()
    mine.write_text("my translation\n")
    proc = translate(toy, mine.parent, check=False)
    assert proc.returncode != 0 and f"{mine.parent} holds hyp.txt that no run of this recipe made" in proc.stderr
    assert mine.read_text() == "my translation\n"
    other = tmp_path / "testsets" / "test"
    shutil.copytree(toy["test"], other)
    shutil.copy(toy["test"].parent.parent / "segmentation.env", tmp_path)  # a copy of the preparation's test set
    dictionary = other / "bin" / "dict.tgt.txt"
    words = dictionary.read_text().splitlines(keepends=True)
    dictionary.write_text("".join([words[1], words[0], *words[2:]]))
    proc = translate(toy, tmp_path / "o", testset=other, check=False)
    assert proc.returncode != 0 and f"{dictionary} is not the tgt dictionary {toy['ckpt']} was trained with (" \
        in proc.stderr and "its words are numbered otherwise" in proc.stderr
    dictionary.write_text("".join(words[:-1]))
    proc = translate(toy, tmp_path / "o", testset=other, check=False)
    assert proc.returncode != 0 and f"{dictionary} has {len(words) + 3} entries, but {toy['ckpt']} was trained " \
        f"with a tgt dictionary of {len(words) + 4}" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_gen_output_refuses_a_sentence_without_hypothesis(tmp_path):
    """fairseq-generate told to skip sentences (--skip-invalid-size-inputs-valid-test) prints
    no H- line for them: that is an error, not an empty hypothesis."""
    log, out = tmp_path / "generate.log", tmp_path / "hyp.seg"
    log.write_text("S-0\ta b\nH-0\t-0.1\tx y\nS-2\tc\nH-2\t-0.2\tz\n")
    with pytest.raises(SystemExit, match=r"no hypothesis for 1 of 3 sentences \(ids \[1\]\)"):
        write_hypotheses(log, 3, out)
    assert not out.exists()
    with pytest.raises(SystemExit, match="beyond the 1 source lines"):  # an id beyond the source lines too
        write_hypotheses(log, 1, out)
    log.write_text("H-1\t-0.1\tb\nH-0\t-0.1\ta\n")
    write_hypotheses(log, 2, out)
    assert lines(out) == ["a", "b"]


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_scripts_train_and_translate_a_scheme_spec(toy, tmp_path):
    """Any architecture, and any spec of schemes with settings, goes through train.sh and
    translate.sh as the study's archs do."""
    save = tmp_path / "alibi+shaw"
    train = [arg if arg != toy["save"] else save for arg in toy["train"]]
    train[train.index("transformer_abs")] = "relpos_transformer"
    run(train + ["--encoder-pos", "alibi+shaw_k:k=4", "--decoder-pos", "rope+t5:buckets=8"])
    assert "encoder alibi+shaw_k:k=4, decoder rope+t5:buckets=8" in (save / "train.log").read_text()
    out = tmp_path / "translated"
    run(["bash", SCRIPTS / "translate.sh", "--checkpoint", save / "checkpoint_last.pt", "--testset",
         toy["test"], "--out-dir", out, "--cpu"])
    assert len(lines(out / "hyp.txt")) == len(lines(toy["test"] / "raw.src"))


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_train_refuses_a_folder_holding_another_model(toy):
    train = [str(c) for c in toy["train"]]
    assert training_state(train).done
    other_arch = list(train)
    other_arch[other_arch.index("--arch") + 1] = "transformer_rel"
    with pytest.raises(StepError, match=re.escape("holds a model trained with other settings (--arch transformer_abs, "
                                                  "now transformer_rel)")):
        training_state(other_arch)
    with pytest.raises(StepError, match=re.escape("--lr 3e-4, now 1e-3")):
        training_state(train + ["--lr", "1e-3"])


def training_step(train_command):
    """The step of TRAIN_COMMAND (train.sh's command line) on the CPU, in-process."""
    from relpos_recipes.graphs.training import train_options

    command = [str(a) for a in train_command]
    return train_options(command[command.index(str(SCRIPTS / "train.sh")) + 1:]).step(0)


def training_state(train_command):
    """What a run of TRAIN_COMMAND would find, planned in-process: its step's state, or the
    refusal it stops with before any work."""
    from relpos_recipes.engine import Graph, Job
    from relpos_recipes.engine.plan import plan

    step = training_step(train_command)
    return plan(Graph([Job("train", [step])], roots=[step.home])).states[step]


def interrupted(save, train_command):
    """SAVE as a run of TRAIN_COMMAND (train.sh's command line) left it when it was killed:
    its manifest 'running', with that command's identity."""
    from relpos_recipes.engine import manifest

    step = training_step(train_command)
    record = manifest.Record.start(step, {path: manifest.fingerprint(path) for path in step.inputs})
    manifest.write(step.manifest_path, record)


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_resume_from_an_empty_or_truncated_checkpoint_names_it(toy, tmp_path):
    train = [str(c) for c in toy["train"]]
    train[train.index("--save-dir") + 1] = str(tmp_path / "s")
    (tmp_path / "s").mkdir()
    last = tmp_path / "s" / "checkpoint_last.pt"
    last.write_bytes(b"")
    proc = run(train, check=False)  # no run of train.sh made it: never resumed from
    assert proc.returncode != 0 and f"{tmp_path / 's'} holds checkpoint_last.pt that no run of this recipe made" \
        in proc.stderr
    interrupted(tmp_path / "s", train)  # a run of it was killed while it saved
    proc = run(train, check=False)
    assert proc.returncode != 0 and f"{last} is empty" in proc.stderr
    last.write_bytes(toy["ckpt"].read_bytes()[:4000])
    proc = run(train, check=False)
    assert proc.returncode != 0 and f"{last} is truncated" in proc.stderr
    proc = run(["bash", SCRIPTS / "translate.sh", "--checkpoint", last, "--testset",
                toy["test"], "--out-dir", tmp_path / "o"], check=False)
    assert proc.returncode != 0 and f"{last} is truncated" in proc.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_checkpoint_of_another_architecture_is_never_taken_for_a_finished_training(toy, tmp_path):
    """A folder whose checkpoint_last.pt is another model (transformer_abs, 12 updates) is
    refused by a training of transformer_rel for 10 updates, not taken as one that reached
    --max-update and copied to checkpoint_best.pt."""
    save = tmp_path / "other"
    shutil.copytree(toy["save"], save)
    (save / "checkpoint_best.pt").unlink()
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("transformer_abs")] = "transformer_rel"
    train[train.index("--max-update") + 1] = "10"
    interrupted(save, train)
    proc = run(train, check=False)
    assert proc.returncode != 0
    assert f"{save / 'checkpoint_last.pt'} is a transformer_abs model, not --arch transformer_rel" in proc.stderr
    assert not (save / "checkpoint_best.pt").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_deleted_best_checkpoint_of_an_epoch_limited_training_says_what_to_do(toy, tmp_path):
    """checkpoint_best.pt deleted after a training that ended at --max-epoch: the re-run's
    fairseq-train resumes with nothing left to train, and the error says so and what to do."""
    save = tmp_path / "epochs"
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("--max-update") + 1] = "1000"
    train[train.index("--max-epochs") + 1] = "1"
    run(train)
    (save / "checkpoint_best.pt").unlink()
    proc = run(train, check=False)
    assert proc.returncode != 0
    assert (f"{save / 'checkpoint_best.pt'} is missing and fairseq-train, resuming from checkpoint_last.pt, had "
            "nothing left to train (its --max-epoch or --max-update was reached): restore checkpoint_best.pt, "
            "or move the folder's checkpoints away to train afresh") in proc.stderr


@pytest.mark.parametrize("gpus", ["-1", "abc", "1.5"])
def test_train_refuses_a_bad_gpu_count(tmp_path, gpus, capsys):
    assert recipe(["train", "--data", str(tmp_path), "--arch", "transformer_abs", "--save-dir", str(tmp_path / "s"),
                   "--gpus", gpus, "--dry-run"]) == 1
    assert f"--gpus: expected the number of GPUs to use (0 for the CPU), got '{gpus}'" in capsys.readouterr().err


def test_train_warm_up_only_with_the_plateau_schedule(tmp_path, capsys):
    base = ["train", "--data", tmp_path, "--arch", "transformer_abs", "--save-dir", tmp_path / "s", "--gpus", "0"]
    assert "--warmup-updates 0" in dry_run(capsys, *base)
    assert "--warmup-updates" not in dry_run(capsys, *base, "--lr-scheduler", "inverse_sqrt")


def save_checkpoint(path, arch, data, updates=12, save_dir=None, vocabulary=None, **positions):
    """A checkpoint as fairseq-train 0.12.2 writes one, reduced to what it records of its
    training (the model's configuration, the task's data, the save folder, the updates) and,
    given ``vocabulary``, embeddings of that many rows."""
    import argparse

    import torch

    model = argparse.Namespace(arch=arch, **positions)
    cfg = {"model": model, "task": {"data": str(data)}, "checkpoint": {"save_dir": str(save_dir or path.parent)}}
    weights = {f"{side}.front_end.embed_tokens.weight": torch.zeros(vocabulary, 2) for side in ("encoder", "decoder")
               if vocabulary}
    torch.save({"cfg": cfg, "model": weights, "optimizer_history": [{"num_updates": updates}]}, path)


def write_dictionaries(folder, words, langs=("src", "tgt")):
    folder.mkdir(parents=True, exist_ok=True)
    for lang in langs:
        (folder / f"dict.{lang}.txt").write_text("".join(f"{word} 1\n" for word in words))


@pytest.mark.parametrize("test_words, data_kept, why", [
    (["w2", "w1", "w3"], True, "is not the tgt dictionary {checkpoint} was trained with ({data}/dict.tgt.txt): "
                               "its words are numbered otherwise"),
    (["w1", "w2", "w3", "w4"], False, "has 8 entries, but {checkpoint} was trained with a tgt dictionary of 7"),
])
def test_translate_refuses_a_test_set_of_other_dictionaries_by_name(tmp_path, test_words, data_kept, why):
    """The same corpus prepared again (another seed: its words numbered otherwise) or another
    corpus: the test set's dictionaries are not the model's, refused before any work; where
    the sizes differ, said so (not torch's size mismatch), even with the data gone."""
    from relpos_recipes.graphs.training import Translation

    data = tmp_path / "data-bin" / "len30" / "shard0"
    write_dictionaries(data, ["w1", "w2", "w3"])
    checkpoint = tmp_path / "model" / "checkpoint_best.pt"
    checkpoint.parent.mkdir()
    save_checkpoint(checkpoint, "transformer_rel", data, vocabulary=7)
    testset = tmp_path / "other" / "testsets" / "test"
    write_dictionaries(testset / "bin", ["w1", "w2", "w3"], langs=("src",))
    write_dictionaries(testset / "bin", test_words, langs=("tgt",))
    (testset / "meta.env").write_text("SRC=src\nTGT=tgt\nLINES=1\n")
    (testset.parent.parent / "segmentation.env").write_text("SEGMENTATION=none\n")  # in a prepared folder
    translation = Translation(checkpoint=checkpoint, testset=testset, out=tmp_path / "out")
    if not data_kept:
        shutil.rmtree(tmp_path / "data-bin")
    with pytest.raises(StepError, match=re.escape(f"{testset / 'bin' / 'dict.tgt.txt'} "
                                                  + why.format(checkpoint=checkpoint, data=data))):
        translation.check()
    write_dictionaries(testset / "bin", ["w1", "w2", "w3"], langs=("tgt",))
    translation.check()


@pytest.fixture
def finished_training(tmp_path):
    """A save folder of a training of transformer_rel for 12 updates that reached them, and
    its train.sh command's fairseq-train part."""
    save, data = tmp_path / "transformer_rel", tmp_path / "data-bin" / "len30"
    save.mkdir()
    for name in ("checkpoint_best.pt", "checkpoint_last.pt"):
        save_checkpoint(save / name, "transformer_rel", data, encoder_pos="shaw", decoder_pos="shaw", cross_pos="none")
    command = ["fairseq-train", str(data), "--arch", "transformer_rel", "--max-update", "12", "--patience", "3"]
    return save, data, command


@pytest.mark.parametrize("replacement, why", [
    (dict(arch="transformer_abs"), "is a transformer_abs model, not --arch transformer_rel"),
    (dict(arch="transformer_rel", encoder_pos="shaw:k=8", decoder_pos="shaw:k=8"),
     "is a transformer_rel[encoder shaw:k=8, decoder shaw:k=8] model, not the transformer_rel this command trains"),
    (dict(arch="transformer_rel", data="/elsewhere/len30"), "was trained on /elsewhere/len30, not on this "
                                                            "command's data"),
])
def test_a_checkpoint_of_another_training_in_a_finished_folder_is_refused(finished_training, replacement, why):
    """checkpoint_best.pt replaced by another system's (another architecture, other position
    specs, other data): the re-run training, which finds checkpoint_last.pt at --max-update,
    refuses it by name instead of handing it on as its model."""
    from relpos_recipes.tools.fairseq_train import train

    save, data, command = finished_training
    best = save / "checkpoint_best.pt"
    save_checkpoint(best, **{"data": data, **replacement})
    with pytest.raises(SystemExit, match=re.escape(f"error: {best} {why}")):
        train(save, command)


def test_checkpoints_of_a_folder_moved_with_its_data_are_its_own(finished_training, tmp_path):
    from relpos_recipes.tools.fairseq_train import train

    save, data, command = finished_training
    moved = tmp_path / "moved"  # the save folder and the data, moved together
    shutil.copytree(save, moved / "transformer_rel")
    train(moved / "transformer_rel", [command[0], str(moved / "data-bin" / "len30"), *command[2:]])


@pytest.mark.parametrize("finished", ["max-update", "patience"])
def test_a_lost_best_checkpoint_of_a_finished_training_is_not_replaced_by_the_last(finished_training, finished):
    """checkpoint_best.pt deleted after the training reached --max-update or stopped early by
    --patience: the last checkpoint is no stand-in for it (after an early stop it is the worse
    one by construction); the run says what to do."""
    from relpos_recipes.tools.fairseq_train import train

    save, data, command = finished_training
    if finished == "patience":
        command[command.index("--max-update") + 1] = "1000"
        (save / "train.log").write_text(
            "2026-11-23 17:27:24 | INFO | fairseq_cli.train | {'_name': None, 'common': {}}\n"
            "2026-11-23 17:29:53 | INFO | fairseq_cli.train | early stop since valid performance hasn't "
            "improved for last 3 runs\n2026-11-23 17:29:53 | INFO | fairseq_cli.train | done training in 142.9 seconds\n")
    (save / "checkpoint_best.pt").unlink()
    with pytest.raises(SystemExit, match=re.escape(f"{save / 'checkpoint_best.pt'} is missing and ")
                       + ".*restore checkpoint_best.pt, or move the folder's checkpoints away to train afresh"):
        train(save, command)
    assert not (save / "checkpoint_best.pt").exists()


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_training_ended_before_it_was_marked_done_is_not_trained_further(toy, tmp_path):
    """Killed after its last checkpoint but before its manifest said done: the re-run ends
    where the uninterrupted training ended (fairseq alone would take one more update)."""
    save = tmp_path / "copy"
    shutil.copytree(toy["save"], save)
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    interrupted(save, train)
    before = (save / "checkpoint_last.pt").read_bytes()
    proc = run(train)
    assert "has reached --max-update 12: training had finished" in proc.stdout
    assert (save / "checkpoint_last.pt").read_bytes() == before
    assert "skip  train transformer_abs (done)" in run(train).stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_training_stopped_by_its_patience_is_not_trained_further(toy, tmp_path):
    """Its last run ended by --patience, but the manifest never said done (killed, or redone
    because an input changed): fairseq would resume and train --patience more evaluations."""
    save = tmp_path / "patient"
    shutil.copytree(toy["save"], save)
    with open(save / "train.log", "a", encoding="utf-8") as log:
        log.write("2026-11-23 17:27:24 | INFO | fairseq_cli.train | {'_name': None, 'common': {}}\n"
                  "2026-11-23 17:29:53 | INFO | fairseq_cli.train | early stop since valid performance "
                  "hasn't improved for last 3 runs\n"
                  "2026-11-23 17:29:53 | INFO | fairseq_cli.train | done training in 142.9 seconds\n")
    before = (save / "checkpoint_last.pt").read_bytes()
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("--patience") + 1] = "3"
    train[train.index("--max-update") + 1] = "1000"
    interrupted(save, train)
    proc = run(train)
    assert "stopped early (--patience 3): training had finished" in proc.stdout
    assert (save / "checkpoint_last.pt").read_bytes() == before


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_longer_training_goes_on_from_its_checkpoint_when_asked_by_name(toy, tmp_path):
    """A larger --max-update over a finished training is refused, saying how to go on; with
    --resume-with-changes fairseq resumes from checkpoint_last.pt (its checkpoints are not
    removed first) and the folder is done under the new settings.  Without its manifest the
    folder is no run's of train.sh, and is refused as such."""
    save = tmp_path / "longer"
    shutil.copytree(toy["save"], save)
    train = [str(arg) if arg != toy["save"] else str(save) for arg in toy["train"]]
    train[train.index("--max-update") + 1] = "20"
    refused = run(train, check=False)
    assert refused.returncode != 0 and "(--max-update 12, now 20)" in refused.stderr
    assert "--resume-with-changes to go on from its checkpoint_last.pt" in refused.stderr
    run(train + ["--resume-with-changes"])
    log = (save / "train.log").read_text()
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ 12 updates\)", log)
    assert "num_updates 20" in log
    assert "skip  train transformer_abs (done)" in run(train).stderr
    (save / ".steps" / "train.json").unlink()
    foreign = run(train, check=False)
    assert foreign.returncode != 0 and "that no run of this recipe made" in foreign.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("toy")
def test_a_typo_in_the_arch_does_not_block_the_corrected_command(toy, tmp_path):
    """After a training that failed on a typo, the corrected command is planned to run, not refused."""
    save = tmp_path / "typo"
    train = [arg if arg != toy["save"] else save for arg in toy["train"]]
    typo = list(train)
    typo[typo.index("transformer_abs")] = "transformer_nonexistent"
    assert run(typo, check=False).returncode != 0
    state = training_state(train)  # no checkpoint of the typo exists: nothing to protect
    assert state.reason in ("started before with another command", "failed before with another command")
