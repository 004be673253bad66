"""The metric families: one module per family, its formula as a plain batched function and
its record(s) in ``METRIC_FAMILIES``.

Why a package of their own: it is the only one :mod:`custom_metrics.registry` scans, so
the table is exactly what these modules declare, and scanning stays cheap. A family
module imports the heavy machinery it needs (judge client, FM, scorer models, torch)
inside the functions that use it, so that building the table, or a ROUGE-only run,
loads none of it.
"""
