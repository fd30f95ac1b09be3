"""The progress console reads a step's progress with the format its step brings
(Display.progress), and none from a step without one."""
import io
import re

from relpos_recipes.engine import Display, ProgressConsole, ProgressFormat, Step

FORMAT = ProgressFormat(updates=re.compile(r"step (\d+)"), loss=re.compile(r"loss=([\d.]+)"),
                        dev_loss=re.compile(r"dev ([\d.]+)"), max_updates=re.compile(r"--steps (\d+)"))


def progress_line(tmp_path, progress) -> str:
    out = io.StringIO()
    console = ProgressConsole(stream=out, interval=3600)
    step = Step("train", ["train", "--steps", "40"], home=tmp_path, display=Display(label="abs", progress=progress))
    console.step_started(step, "not run before")
    console.step_line(step, "step 10 loss=2.5")
    console.step_line(step, "dev 3.25 (step 10 loss=9)")  # an evaluation: shown at once
    return out.getvalue().splitlines()[-1]


def test_a_steps_progress_line_reads_its_output_with_the_format_it_brings(tmp_path):
    assert progress_line(tmp_path, FORMAT).startswith("[abs] train 10/40 updates · loss 9 · dev loss 3.25 · ")


def test_a_step_without_a_progress_format_shows_only_its_time(tmp_path):
    assert re.fullmatch(r"\[abs\] train · \d+s so far", progress_line(tmp_path, None))
