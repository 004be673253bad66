"""Getting a run's data ready, over the catalogue's tasks: the mirror built from a release
or the hub (:mod:`.mirror`, ``domsum prepare-data``), the domain vocabularies DVO reads
(:mod:`.vocab`, ``domsum build-vocab``) and the check that every requested task's data is
there before a model loads (:mod:`.check`).

Why above the catalogue and not in :mod:`lm_eval_tasks.data`: these read the catalogue
(tasks, subsets, levels) and each benchmark's record; the data package is handed its
sources and knows no benchmark, so the catalogue and the benchmarks can import it.
Nothing here imports ``lm_eval``.
"""
