"""Data of the suite: the mirror and hub loader with its sampling (:mod:`.loader`), the
record checks and hub sources (:mod:`.records`), the hub's reachability (:mod:`.hub`) and
a user domain's own files (:mod:`.user_files`).

The package is handed its sources (a task's hub source, a user domain's files) and imports
neither the catalogue nor the benchmarks, which both import it; building the mirror and
the vocabularies over the catalogue's tasks is :mod:`lm_eval_tasks.preparation`. Nothing in
this package imports ``lm_eval``: fine-tuning and the analysis commands load the same
records as the harness tasks without loading the harness.
"""
