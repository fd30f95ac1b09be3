"""SCAN generated from its grammar: the public data set's pairs, its length split and the cutoff resplits."""
import hashlib

import pytest

from relpos_recipes.tools import scan

PAIRS = scan.all_pairs()
ACTIONS = dict((command, " ".join(actions)) for command, actions in PAIRS)

# sha256 of the public repository's files (brendenlake/SCAN), their lines sorted bytewise
# (`LC_ALL=C sort FILE | sha256sum`): the same set of pairs, whatever the order
PUBLIC_SORTED_SHA256 = {
    "tasks.txt": "6be4b39bc8bf3a20be810b6991250d0493e608560609db6765dd679e1ed1c98e",
    "tasks_train_length.txt": "7ffb97f45029871c94bede7e723f7a4aa179eb99fe2b977a18283310422c719d",
    "tasks_test_length.txt": "3297fd0b676c391f7bc3a7385aa66a7fdf64f6f8e81ad584810c1d4ebd0eaa2c",
}


def sorted_sha256(path):
    return hashlib.sha256(b"".join(sorted(path.read_bytes().splitlines(keepends=True)))).hexdigest()


def test_the_grammar_has_20910_distinct_commands_of_1_to_48_actions():
    assert len(PAIRS) == 20910 == len(ACTIONS)
    lengths = [len(actions) for _, actions in PAIRS]
    assert (min(lengths), max(lengths)) == (1, 48)
    assert 23 not in lengths  # why the length split's test set starts at 24


@pytest.mark.parametrize("command, actions", [
    # derived by hand from the interpretation rules
    ("jump", "I_JUMP"),
    ("turn left twice", "I_TURN_LEFT I_TURN_LEFT"),
    ("jump opposite left", "I_TURN_LEFT I_TURN_LEFT I_JUMP"),
    ("turn opposite right thrice", "I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT"),
    ("walk around left", "I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK"),
    ("turn around right", "I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT I_TURN_RIGHT"),
    ("look right thrice and run twice", "I_TURN_RIGHT I_LOOK I_TURN_RIGHT I_LOOK I_TURN_RIGHT I_LOOK I_RUN I_RUN"),
    # after: the second command first
    ("jump opposite left after walk around left",
     "I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_WALK I_TURN_LEFT I_TURN_LEFT I_JUMP"),
    ("run after jump left twice", "I_TURN_LEFT I_JUMP I_TURN_LEFT I_JUMP I_RUN"),
])
def test_commands_mean_what_the_interpretation_rules_say(command, actions):
    assert ACTIONS[command] == actions


def test_the_longest_command_has_48_actions():
    longest = "jump around left thrice and walk around right thrice"
    assert len(ACTIONS[longest].split()) == 48


@pytest.mark.parametrize("split, files", [
    ("all", {"tasks.txt": 20910}),
    ("length", {"tasks_train_length.txt": 16990, "tasks_test_length.txt": 3920}),
])
def test_the_public_splits_are_written_with_the_public_pairs(tmp_path, split, files):
    scan.main(["--split", split, "--out-dir", str(tmp_path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)
    for name, count in files.items():
        lines = (tmp_path / name).read_text().splitlines()
        assert len(lines) == count
        assert all(scan.parse_line(text, name) for text in lines)
        assert sorted_sha256(tmp_path / name) == PUBLIC_SORTED_SHA256[name]


# pairs of at most C actions and longer ones, for each of the published cutoffs
CUTOFF_COUNTS = {22: (16990, 3920), 24: (17326, 3584), 25: (17774, 3136), 26: (18286, 2624),
                 27: (18734, 2176), 28: (19182, 1728), 30: (19758, 1152), 32: (20206, 704),
                 33: (20462, 448), 36: (20526, 384), 40: (20782, 128)}


@pytest.mark.parametrize("cutoff", scan.PUBLISHED_CUTOFFS)
def test_a_cutoff_split_trains_and_holds_out_dev_at_most_c_actions_and_tests_the_longer(cutoff):
    split = scan.cutoff_split(PAIRS, cutoff)
    within, beyond = CUTOFF_COUNTS[cutoff]
    assert len(split["train"]) + len(split["dev"]) == within and len(split["test"]) == beyond
    assert max(len(a) for _, a in split["train"] + split["dev"]) <= cutoff < min(len(a) for _, a in split["test"])
    assert abs(len(split["dev"]) / within - scan.DEV_FRACTION) < 0.01
    assert not {c for c, _ in split["dev"]} & {c for c, _ in split["train"]}


def test_a_cutoff_split_is_deterministic_and_its_dev_set_follows_the_seed(tmp_path):
    first, second, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    scan.main(["--split", "cutoff:26", "--out-dir", str(first)])
    scan.main(["--split", "cutoff:26", "--out-dir", str(second)])
    scan.main(["--split", "cutoff:26", "--out-dir", str(other), "--seed", "7"])
    names = ["tasks_train_cutoff26.txt", "tasks_dev_cutoff26.txt", "tasks_test_cutoff26.txt"]
    assert sorted(p.name for p in first.iterdir()) == sorted(names)
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert (first / names[1]).read_bytes() != (other / names[1]).read_bytes()
    assert (first / names[2]).read_bytes() == (other / names[2]).read_bytes()


@pytest.mark.parametrize("argv, message", [
    (["--split", "cutoff:x"], "expected 'length', 'all' or 'cutoff:C'"),
    (["--split", "simple"], "expected 'length', 'all' or 'cutoff:C'"),
    (["--split", "cutoff:48"], "a cutoff must leave pairs on both sides (1 to 47 actions), got 48"),
])
def test_a_split_that_is_not_one_is_refused_by_name(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit):
        scan.main(argv + ["--out-dir", str(tmp_path / "out")])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_line_that_is_not_scans_format_is_named():
    with pytest.raises(ValueError, match="train.txt:3: expected 'IN: <command> OUT: <actions>'"):
        scan.parse_line("jump\tI_JUMP", "train.txt:3")
