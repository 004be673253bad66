"""DomainSum (Yuan & Zhang, Findings of NAACL 2025): the benchmark as one object, :data:`BENCHMARK`.

Its facts are :mod:`.record`'s (the record: subsets, sources, budgets, families,
headline keys, settings rows, citation); its behaviour (data, prompts)
is :mod:`.build`, imported when the hook first runs
(:func:`~lm_eval_tasks.benchmarks.record.subset_docs` says why); the authors' release,
which ``domsum prepare-data --release`` converts, is read by :mod:`.release`.
"""

from __future__ import annotations

from dataclasses import replace

from lm_eval_tasks.benchmarks.domainsum.record import RECORD
from lm_eval_tasks.benchmarks.domainsum.release import RELEASE
from lm_eval_tasks.benchmarks.record import subset_docs


def _behaviour():
    from lm_eval_tasks.benchmarks.domainsum.build import build_docs

    return build_docs


BENCHMARK = replace(RECORD, build_docs=subset_docs(_behaviour), release=RELEASE)

__all__ = ["BENCHMARK"]
