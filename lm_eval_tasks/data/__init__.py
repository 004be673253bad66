"""Data of the suite: the mirror and hub loader with its sampling (:mod:`.loader`), building
the mirror from the release or the hub (:mod:`.mirror`) and the domain vocabularies DVO
reads (:mod:`.vocab`).

Nothing in this package imports ``lm_eval``: fine-tuning and the analysis commands load
the same records as the harness tasks without loading the harness.
"""
