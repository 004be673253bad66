"""The benchmark records, one module per paper: every fact of a benchmark in one place.

:data:`RECORDS` holds the suite's benchmarks in the order tables list them;
:data:`USER` is the record of every user domain (benchmark ``own``). Adding a subset to a
benchmark is one entry in its record; the catalogue, the YAMLs, the loader, the report
and scoring read it from here.
"""

from __future__ import annotations

from lm_eval_tasks.benchmarks.papers import adapteval, ccsbench, domainsum, medqsum, own
from lm_eval_tasks.benchmarks.record import Benchmark

RECORDS: dict[str, Benchmark] = {r.name: r for r in (domainsum.RECORD, adapteval.RECORD, ccsbench.RECORD,
                                                     medqsum.RECORD)}
USER: Benchmark = own.RECORD
#: the suite's records and the user's, in the order reports list them
ALL_RECORDS: dict[str, Benchmark] = {**RECORDS, USER.name: USER}

__all__ = ["ALL_RECORDS", "RECORDS", "USER"]
