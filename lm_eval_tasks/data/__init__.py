"""Data of the suite: the mirror and hub loader (:mod:`.loader`) and the release converters.

Nothing in this package imports ``lm_eval``: fine-tuning and the analysis commands load
the same records as the harness tasks without loading the harness.
"""
