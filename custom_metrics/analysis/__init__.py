"""Analysis code that needs no task catalogue: the statistics package (correlations,
bootstrap intervals, paired tests, kappa), meta-evaluation, plots, synthetic pairs,
DomainSum's domain measures (:mod:`.measures`, with the fragment scans of
:mod:`.fragments` and the per-pair formulas of :mod:`.pair_values`; :mod:`.domains`
runs them over a corpus), AdaptEval's token distribution shift (:mod:`.token_shift`
the formulas, :mod:`.shift_models` the model pairs) and expert ranking studies
(:mod:`.rankings`: top-k shares, pairwise kappa, Kendall's W).

Why apart from the metric library: these import the metrics and describe corpora or
models rather than score one summary, and no metric module imports them
(``tests/unit/test_import_rules.py``), so a scoring run loads none of this package.

Why apart from the ``domsum`` commands: these are pure functions of tables and texts,
reusable from a notebook; the commands in :mod:`lm_eval_tasks.commands` pass in the
domain and level lists they take from the catalogue. Nothing here imports
``lm_eval_tasks``; errors are the typed ones of :mod:`.errors`, never ``SystemExit``.
"""
