"""Analysis code that needs no task catalogue: the statistics package (correlations,
bootstrap intervals, paired tests, kappa), meta-evaluation, plots, synthetic pairs.

Why apart from the ``domsum`` commands: these are pure functions of tables and texts,
reusable from a notebook; the commands in :mod:`lm_eval_tasks.commands` pass in the
domain and level lists they take from the catalogue. Nothing here imports
``lm_eval_tasks``; errors are the typed ones of :mod:`.errors`, never ``SystemExit``.
"""
