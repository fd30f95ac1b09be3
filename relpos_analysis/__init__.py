"""Length-bucket analysis of translation quality: the reference study's Table 2 (Rosendahl et al. 2019).

Per source-length bucket, every system's sacrebleu BLEU/TER/chrF with bootstrap confidence
intervals and paired tests against a baseline; ``python -m relpos_analysis.report`` (installed as
``relpos-report``) is the command line, docs/analysis.md the manual.
"""
