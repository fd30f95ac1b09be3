"""What fairseq-train's and fairseq-generate's logs say, read in one place: by the board
(parameters, learning rate, speed, updates), the recipes' choice of a learning rate (dev
losses), their progress lines (updates, losses) and their training and translation steps (an
early stop, a source too long for the model)."""
import re
from typing import List, Optional, Sequence

PARAMETERS = re.compile(r"num\. shared model params: ([\d,]+)")
# the configuration fairseq-train logs when it starts: "... 'optimization': {..., 'lr':
# [0.003], ...}" (its optimizer's and scheduler's sections repeat 'lr', after this one)
LEARNING_RATE = re.compile(r"'optimization': \{[^{}]*?'lr': \[([^\]]*)\]")
# progress, end-of-epoch and validation lines: "num_updates=120," or "| num_updates 120 |"
UPDATES = re.compile(r"\bnum_updates[= ](\d+)")
# fairseq's progress lines ("| train_inner | ... ups=0.71, ...", every --log-interval
# updates) and its end-of-epoch summaries ("| train | epoch 001 | ... | ups 0.71 | ...")
UPDATES_PER_SECOND = re.compile(r"\| train(?:_inner)? \|.*\bups[= ]([\d.]+)")
TRAIN_LOSS = re.compile(r"\| train_inner \|.*?\bloss=([\d.]+)")
DEV_LOSS = re.compile(r"\| valid on '[^']+' subset \| loss ([\d.]+)")
MAX_UPDATE = re.compile(r"--max-update[= ](\d+)")
# Lines that only fairseq-train writes: its loggers' names, its parameter count, its
# progress and epoch lines, its usage error.
FAIRSEQ_TRAIN_LINE = re.compile(
    r"\| (fairseq_cli\.train|fairseq\.trainer|train_inner|train|valid) \||"
    r"num\. shared model params|fairseq-train: error"
)
# where each fairseq-train run starts in a log it appends to (the configuration it logs)
RUN_START = "| fairseq_cli.train | {'_name'"
DONE_TRAINING = "| fairseq_cli.train | done training in"
# fairseq-generate's refusal of a test pair, source or reference, longer than the model's
# positions: "... #3 is invalid (=(30, 4)) since max_positions=(20, 1024)", its sizes numpy's
# (np.int64(30) under numpy 2)
_SIZE = r"(?:np\.\w+\()?(\d+)\)?"
TOO_LONG = re.compile(rf"Size of sample #(\d+) is invalid \(=\({_SIZE}, {_SIZE}\)\) since "
                      rf"max_positions=\({_SIZE}, {_SIZE}\)")
# the line a failed fairseq command says why in: a traceback's last (its exception, at the
# start of a line, after the indented frames) or argparse's usage error
ERROR_LINE = re.compile(r"^(?:[\w.]*(?:Error|Exception|Exit)\b.*|[\w.-]+: error: .*)$")


def dev_losses(text: str) -> List[float]:
    return [float(x) for x in DEV_LOSS.findall(text)]


def last_updates(text: str) -> Optional[int]:
    updates = UPDATES.findall(text)
    return int(updates[-1]) if updates else None


def last_run(text: str) -> str:
    """The part of an appended-to train.log that its last fairseq-train run wrote."""
    return text[text.rfind(RUN_START):]


def stopped_early(text: str, patience: int) -> bool:
    """Whether the last run in a train.log ended by --patience ``patience``."""
    run = last_run(text)
    return (f"early stop since valid performance hasn't improved for last {patience} runs" in run
            and DONE_TRAINING in run)


def too_long(lines: Sequence[str]) -> Optional[str]:
    """Which side of which test pair fairseq-generate refused as too long for the model, if it
    refused one: the source, or else the reference (fairseq checks both sides' lengths)."""
    match = next((m for m in map(TOO_LONG.search, lines) if m), None)
    if match is None:
        return None
    pair, source, target, source_bound, target_bound = (int(group) for group in match.groups())
    if source > source_bound:
        return (f"a source is longer than the model's positions: sentence {pair} has {source} source tokens, "
                f"beyond its {source_bound}")
    return (f"a reference is longer than the model's positions: sentence {pair}'s reference has {target} target "
            f"tokens, beyond its {target_bound} (fairseq-generate checks the reference's length too, although it "
            "translates without it)")


def last_error(lines: Sequence[str]) -> Optional[str]:
    """The line a failed fairseq command says why it failed in, if it said one."""
    return next((line.strip() for line in reversed(lines) if ERROR_LINE.match(line.rstrip("\n"))), None)
