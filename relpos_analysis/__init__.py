"""Length-bucket analysis of translation quality: the reference study's Table 2 (Rosendahl et al. 2019).

Per source-length bucket, every system's sacrebleu BLEU/TER/chrF with bootstrap confidence
intervals and paired tests against a baseline; ``python -m relpos_analysis.report`` (installed as
``relpos-report``) is the command line, docs/analysis.md the manual.  ``load_report(path)`` and
``load_board(path)`` read a report's or a board's records as one long pandas DataFrame
(relpos_analysis.frames).

Each of the three commands has the same four parts, named alike: ``X`` (``report``,
``leaderboard``, ``bands``) parses its request once and runs the command, ``inputs`` reads and
checks the files every command names, ``X_model`` computes the model from lists of strings and
numbers, and ``X_render`` turns it into tables, records and figures (relpos_analysis.tables).
"""


def __getattr__(name):
    # pandas is imported by the notebooks that ask for a frame, not by every command
    if name in ("load_report", "load_board"):
        from . import frames

        return getattr(frames, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
