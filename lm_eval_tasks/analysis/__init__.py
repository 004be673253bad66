"""Analyses of the suite's runs and data that read suite facts (samples files, the task
catalogue, the data mirror): the token-shift runner, per-domain corpus statistics,
CCSBench's change amplitude and the cross-domain training loop.

Why not in :mod:`custom_metrics.analysis`: the metric library imports nothing from the
task suite; what here needs no suite fact lives there (the formulas, the models'
forward passes, the per-domain measures and vocabularies) and is imported from here.
The ``domsum`` commands parse flags and call one function of these modules.
"""
