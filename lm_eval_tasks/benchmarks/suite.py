"""The facts of the suite's benchmarks, collected: every benchmark's record, in table order.

:data:`RECORDS` holds the suite's benchmarks in the order tables list them; :data:`USER`
is the record of every user domain (benchmark ``own``). The settings table, the loader's
hub sources and the report read the facts here; the catalogue expands each package's
``BENCHMARK`` (these facts and the behaviour's hooks) into tasks.

Why the records and not the packages' objects: the behaviour reads the settings and the
loader, which read this module; the records import no behaviour.
"""

from __future__ import annotations

from lm_eval_tasks.benchmarks.adapteval.record import RECORD as ADAPTEVAL
from lm_eval_tasks.benchmarks.ccsbench.record import RECORD as CCSBENCH
from lm_eval_tasks.benchmarks.domainsum.record import RECORD as DOMAINSUM
from lm_eval_tasks.benchmarks.medqsum.record import RECORD as MEDQSUM
from lm_eval_tasks.benchmarks.own.record import RECORD as USER
from lm_eval_tasks.benchmarks.record import Benchmark

RECORDS: dict[str, Benchmark] = {r.name: r for r in (DOMAINSUM, ADAPTEVAL, CCSBENCH, MEDQSUM)}
#: the suite's records and the user's, in the order reports list them
ALL_RECORDS: dict[str, Benchmark] = {**RECORDS, USER.name: USER}

# The roles a benchmark plays where a command or a module needs one by default, held as
# references: a consumer outside this package says ``DOMAIN_STUDY.name``, never the name.
#: the study of domain shift across levels: what ``prepare-data``, ``cross-domain-train``
#: and the demo default to
DOMAIN_STUDY = DOMAINSUM
#: the study of domain adaptation, whose domain vocabularies DVO reads (``build-vocab --all``)
ADAPTATION_STUDY = ADAPTEVAL
#: the study of controllable summarization (``change-amplitude``)
CONTROL_STUDY = CCSBENCH
#: the groups the demo evaluates: the domain study's genre level, zero- and two-shot
DEMO_TASKS = ("domainsum_genre", "domainsum_genre_2shot")

__all__ = ["ADAPTATION_STUDY", "ALL_RECORDS", "CONTROL_STUDY", "DEMO_TASKS", "DOMAIN_STUDY", "RECORDS", "USER"]
