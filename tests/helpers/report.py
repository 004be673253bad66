"""Helpers shared by the unit and integration tests of report (tests/unit, tests/integration)."""

from __future__ import annotations


import numpy as np
from scipy import stats as sstats


def _scipy_paired(a, b, statistic, n_resamples=10_000):
    """scipy's paired permutation test on document indices, so any corpus statistic works."""
    items = list(a) + list(b)
    n = len(a)

    def stat(x, y):
        return statistic([items[int(i)] for i in x]) - statistic([items[int(i)] for i in y])

    res = sstats.permutation_test((np.arange(n), np.arange(n, 2 * n)), stat, permutation_type="samples",
                                  n_resamples=n_resamples, vectorized=False, alternative="two-sided")
    return res.pvalue


def holm_adjusted(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out here from its definition (Holm 1979), so a
    test's expected corrected p-values never come from the report's own function."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


def hand_run(label: str, scores: dict[str, dict], task: str = "domainsum_cnndm", shots: int = 0):
    """A report run built in memory from hand-made per-document scores (document id -> key ->
    logged value or corpus item), its reported values folded as the harness folds them:
    what the report's statistics read, with no results or samples file behind it."""
    from pathlib import Path

    from lm_eval_tasks import catalog
    from lm_eval_tasks.report.runs import Run
    from lm_eval_tasks.report.stats import fold
    from lm_eval_tasks.report.systems import System
    from lm_eval_tasks.results import Sample

    samples = [Sample(doc_id=i, id=doc, filter="none", document="", reference="", prediction="", logged=dict(logged))
               for i, (doc, logged) in enumerate(scores.items())]
    run = Run(system=System(base=f"org/{label}", label=label), task=task, spec=catalog.lookup(task), shots=shots,
              values={}, stderr={}, results_file=Path(f"{label}/results.json"), timestamp="", samples=samples)
    keys = {k for logged in scores.values() for k in logged}
    run.values = {k: fold(run, k, list(run.per_doc(k).values())) for k in keys}
    return run
