"""End to end through the stock fairseq commands (every architecture): preprocess a tiny
corpus, train one short epoch, reload, generate with beam 4 on sources three times longer than
any training sentence; resume training (one architecture per kind of position parameters:
resuming is fairseq's checkpoint code, the same for all).  Per architecture in this process,
through the functions the console scripts call; the console scripts themselves for
fairseq-interactive, the hub, DDP under torchrun, the refusals and the overrides."""
import os
import re
import shutil
import socket
import subprocess

import pytest

from fairseq_relpos import ARCHITECTURES

from conftest import BIN_DIR, TINY_TRAIN_ARGS, fairseq, fairseq_in_process

pytestmark = pytest.mark.slow

LONG_TEST_SUBSET = "test1"  # the second --testpref of the reversal corpus: 36-40 tokens


def train_args(data_bin, save_dir, arch, *extra, epochs=1):
    return [data_bin, "--user-dir", "fairseq_relpos", "--arch", arch, *TINY_TRAIN_ARGS, "--max-epoch", epochs,
            "--save-dir", save_dir, "--cpu", *extra]


def generate_args(data_bin, checkpoint, subset="test", *extra):
    return [data_bin, "--user-dir", "fairseq_relpos", "--path", checkpoint, "--gen-subset", subset, "--beam", 4,
            "--batch-size", 16, "--cpu", *extra]


def train(data_bin, save_dir, arch, *extra, epochs=1, cwd=None):
    """fairseq-train in this process (``fairseq_in_process``); returns what it logged."""
    return fairseq_in_process("fairseq-train", *train_args(data_bin, save_dir, arch, *extra, epochs=epochs), cwd=cwd)


def generate(data_bin, checkpoint, subset="test", *extra, check=True):
    return fairseq("fairseq-generate", *generate_args(data_bin, checkpoint, subset, *extra), check=check)


def hypotheses(generate_output):
    return [line for line in generate_output.splitlines() if line.startswith("H-")]


# input embeddings and tables (abs_learned), per-head tables shared by layers (t5), an
# LSTM, per-layer projections and biases (xl), chunked pairwise terms (huang3)
RESUMED = {"transformer_abs_learned", "transformer_rel", "transformer_t5", "transformer_lstm_pos",
           "transformer_xl", "transformer_huang3"}


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_train_generate_resume(arch, reversal_data_bin, tmp_path):
    """fairseq-train, fairseq-generate and fairseq-train again, in this process through the
    functions their console scripts call (the commands themselves start in the other tests
    of this module, in tests/plugin/test_oracle_length.py and in every recipe)."""
    # run from a directory without the plugin: --user-dir resolves the installed package
    trained = train(reversal_data_bin, tmp_path / "ckpt", arch, cwd=tmp_path)
    assert "relpos_transformer: encoder" in trained
    assert (tmp_path / "ckpt/checkpoint_last.pt").exists()

    # sources three times longer than any training sentence
    long = fairseq_in_process("fairseq-generate", *generate_args(reversal_data_bin, tmp_path / "ckpt/checkpoint_last.pt",
                                                                 LONG_TEST_SUBSET), cwd=tmp_path)
    assert len(hypotheses(long)) == 6
    assert f"Generate {LONG_TEST_SUBSET} with beam=4" in long

    if arch not in RESUMED:
        return
    resumed = train(reversal_data_bin, tmp_path / "ckpt", arch, epochs=2, cwd=tmp_path)
    # fairseq names the epoch it resumes into
    assert re.search(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch 2 @ [1-9]\d* updates\)", resumed)
    assert "end of epoch 2" in resumed and "end of epoch 1" not in resumed


def test_learned_positions_refuse_long_sources_clearly(reversal_data_bin, tmp_path):
    train(reversal_data_bin, tmp_path / "ckpt", "transformer_abs_learned",
          "--max-source-positions", 16, "--max-target-positions", 16)
    refused = generate(reversal_data_bin, tmp_path / "ckpt/checkpoint_last.pt", LONG_TEST_SUBSET,
                       "--max-source-positions", 100, "--max-target-positions", 100, check=False)
    assert refused.returncode != 0
    assert "max_positions=(16, 16)" in refused.stderr
    # the model's line says which option bounds it
    assert "encoder tables hold 16 positions (--max-source-positions at training time)" in refused.stderr


def interactive(data_bin, checkpoint_dir, lines, *extra):
    """fairseq-interactive on ``lines``; returns the CompletedProcess."""
    return subprocess.run(
        [str(BIN_DIR / "fairseq-interactive"), str(data_bin), "--user-dir", "fairseq_relpos",
         "--path", str(checkpoint_dir / "checkpoint_last.pt"), "--cpu", "--source-lang", "src", "--target-lang", "tgt",
         *map(str, extra)],
        input="".join(line + "\n" for line in lines), capture_output=True, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def hub_translate(data_bin, checkpoint_dir, sentences, cwd, **options):
    """The hub interface's translate() of each sentence in a fresh process; returns the
    CompletedProcess."""
    script = (
        "from fairseq_relpos import RelPosTransformerModel\n"
        f"model = RelPosTransformerModel.from_pretrained({str(checkpoint_dir)!r}, "
        f"checkpoint_file='checkpoint_last.pt', data_name_or_path={str(data_bin)!r}, "
        "source_lang='src', target_lang='tgt')\n"
        f"for sentence in {list(sentences)!r}:\n"
        f"    print('TRANSLATION', model.translate(sentence, **{options!r}))\n"
    )
    return subprocess.run([str(BIN_DIR / "python"), "-c", script], capture_output=True, text=True, cwd=cwd)


def test_interactive_and_hub_interface(reversal_data_bin, tmp_path):
    """Including sources longer than fairseq's default --max-source-positions (1024): a model
    without position tables translates them."""
    train(reversal_data_bin, tmp_path / "ckpt", "transformer_rel")
    long_source = " ".join(f"w{index % 30}" for index in range(1100))
    translated = interactive(reversal_data_bin, tmp_path / "ckpt", ["w1 w2 w3", "w4 w5", long_source],
                             "--beam", 4, "--max-len-b", 20)
    assert translated.returncode == 0, translated.stderr[-3000:]
    assert len(hypotheses(translated.stdout)) == 3

    hub = hub_translate(reversal_data_bin, tmp_path / "ckpt", ["w1 w2 w3", long_source], tmp_path, beam=4,
                        max_len_b=20)
    assert hub.returncode == 0, hub.stderr[-3000:]
    assert len(re.findall(r"^TRANSLATION \S", hub.stdout, re.M)) == 2


def test_an_option_overriding_the_arch_is_a_warning(reversal_data_bin, tmp_path):
    """fairseq's convention (an option overrides the arch's default) stays, and the log says
    so at WARNING level with the system's effective label."""
    log = train(reversal_data_bin, tmp_path / "ckpt", "transformer_abs", "--encoder-pos", "alibi")
    assert re.search(r"\| WARNING \| fairseq_relpos\.models\.relpos_transformer \| transformer_abs: the options "
                     r"change the architecture's position specs \(--encoder-pos alibi\); this system is "
                     r"transformer_abs\[encoder alibi\], not transformer_abs", log)


def test_rope_scaling_loads_into_a_model_trained_without_it(reversal_data_bin, tmp_path):
    """A setting that only changes inference, given to fairseq-generate by --model-overrides."""
    train(reversal_data_bin, tmp_path / "ckpt", "transformer_rope")
    checkpoint = tmp_path / "ckpt/checkpoint_last.pt"
    yarn = "rope:scaling=yarn,factor=4.0,original=16"
    scaled = fairseq_in_process("fairseq-generate", *generate_args(reversal_data_bin, checkpoint, LONG_TEST_SUBSET,
                                                                   "--model-overrides",
                                                                   repr({"encoder_pos": yarn, "decoder_pos": yarn})))
    assert f"relpos_transformer: encoder {yarn}, decoder {yarn}" in scaled
    assert len(hypotheses(scaled)) == 6
    refused = generate(reversal_data_bin, checkpoint, LONG_TEST_SUBSET, "--model-overrides",
                       repr({"encoder_pos": "rope:scaling=yarn,factor=4"}), check=False)
    assert refused.returncode != 0
    assert "--encoder-pos: rope: original=N (the length trained on) is yarn's setting, and yarn needs it" in refused.stderr


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_process_ddp_training_without_find_unused_parameters(reversal_data_bin, tmp_path):
    """torchrun + gloo + pytorch_ddp on CPU: DDP fails on the second step if a parameter got
    no gradient, so two epochs of several updates each prove invariant 5 in practice.  One
    architecture: T5's bias, one table shared by every layer of a stack, the use DDP is most
    likely to trip over; every architecture's parameters get gradients in one pass in
    tests/plugin/test_model_invariants.py (test_every_parameter_gets_a_gradient)."""
    arch = "transformer_t5"
    result = subprocess.run(
        [str(BIN_DIR / "torchrun"), "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
         "--master_port", str(free_port()), str(BIN_DIR / "fairseq-train"), str(reversal_data_bin),
         "--user-dir", "fairseq_relpos", "--arch", arch, *map(str, TINY_TRAIN_ARGS),
         "--max-epoch", "2", "--max-tokens", "400", "--save-dir", str(tmp_path / "ckpt"), "--cpu",
         "--distributed-backend", "gloo", "--ddp-backend", "pytorch_ddp"],
        capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=300,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    assert "initialized host" in log and "as rank 1" in log
    assert "'find_unused_parameters': False" in log
    assert "end of epoch 2" in log


def test_fairseq_score_with_sacrebleu(tmp_path):
    (tmp_path / "ref").write_text("the cat sat on the mat\na b c d\n")
    (tmp_path / "sys").write_text("the cat sat on a mat\na b c d\n")
    scored = fairseq("fairseq-score", "--sys", tmp_path / "sys", "--ref", tmp_path / "ref", "--sacrebleu")
    assert re.search(r"BLEU = \d+\.\d+", scored.stdout)


@pytest.mark.parametrize("editable", [False, True], ids=["pip-install", "pip-install-e"])
def test_stock_commands_after_install(editable, tmp_path):
    """Both install modes ship the start-up file that makes the stock commands work: install
    into a fresh environment layered over this one, then import fairseq there."""
    from conftest import REPO_ROOT

    env_dir = tmp_path / "env"
    subprocess.run([str(BIN_DIR / "python"), "-m", "venv", "--without-pip", str(env_dir)], check=True)
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    base_site = next((BIN_DIR.parent / "lib").glob("python3*/site-packages"))
    # the base environment's packages, minus this project's own start-up file and install
    (site / "base_env.pth").write_text(f"{base_site}\n")
    source = tmp_path / "src"
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build"))
    install = [str(BIN_DIR / "python"), "-m", "pip", "--python", str(env_dir / "bin/python"), "install",
               "--no-deps", "--no-build-isolation", "-q"] + (["-e"] if editable else []) + [str(source)]
    subprocess.run(install, check=True, capture_output=True)
    assert (site / "fairseq_relpos_compat.pth").exists()
    check = subprocess.run(
        [str(env_dir / "bin/python"), "-c",
         "import sys, fairseq_relpos_compat, fairseq.checkpoint_utils as c; "
         "assert 'fairseq' not in sys.modules or c.torch.load is fairseq_relpos_compat.load_checkpoint; "
         "import fairseq_relpos; print(fairseq_relpos.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONNOUSERSITE": "1"},
    )
    assert check.returncode == 0, check.stderr[-3000:]
    assert str(source) in check.stdout if editable else str(site) in check.stdout
