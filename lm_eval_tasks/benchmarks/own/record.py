"""Your own domains: the record every user domain (``domsum new-task``) shares.

A user's domain is a subset of this benchmark, read from its task YAML
(:mod:`lm_eval_tasks.benchmarks.own.configs`); what the YAML does not say comes from here.
"""

from __future__ import annotations

from custom_metrics.errors import SuiteError
from lm_eval_tasks.benchmarks.record import Benchmark, Variant


class RecordError(SuiteError, ValueError):
    """A user's task YAML that does not describe a domain; the message names the field."""


RECORD = Benchmark(
    name="own",
    title="Your own domains",
    citation="",
    version=1.0,
    families=("rouge", "bertscore", "dvo"),
    variants=(Variant(0), Variant(2)),
    # a user domain's budget and stops are in its YAML (domsum new-task writes DomainSum's)
    max_gen_toks=256,
    until=(),
    headline=("rouge_geo", "rouge_mean", "bertscore_f1", "dvo"),
)

__all__ = ["RECORD", "RecordError"]
