"""The report's pieces a benchmark declares: its papers' table layouts and the published
tables and figures the report and the analysis commands rebuild for it.

Why declared by the benchmark (:attr:`~lm_eval_tasks.benchmarks.record.Benchmark.report`)
and not by the report: which of a paper's tables a run can be held against (AdaptEval
Table 3, CCSBench Tables 4 and 5, DomainSum Table 2), under which names, with which
columns, which measure profile its release computes corpus statistics with, is a fact
of the paper, like its subsets and its budgets. The report builds every piece with one
generic function and reads these facts from the records it is handed, so it names no
benchmark. Plain data: nothing here imports the report, the loader or the harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    """One column of a paper's table: its printed name (the data file's ``column``), the
    suite key computing it, the subset whose runs it reads and the decimals printed."""

    header: str
    key: str
    subset: str
    digits: int = 2


@dataclass(frozen=True)
class Layout:
    """One paper table whose rows are systems in a setting and whose columns are (paper
    column, suite key, subset). ``name``: the report's table name (``<benchmark>_table3``).
    ``kinds``: the kinds of row each system has, as (the paper's row name, the subset every
    column reads instead of its own, or None): CCSBench Table 5's ``Single`` row reads each
    column's single-attribute subset, its ``Compositional`` row the compositional one.
    ``variants``: the task variants a row may come from (``hard``: CCSBench's
    ``Attribute: Value`` prompt)."""

    benchmark: str
    table: str
    name: str
    title: str
    columns: tuple[Column, ...]
    kinds: tuple[tuple[str, str | None], ...] = (("", None),)
    variants: tuple[str, ...] = ("",)
    #: (variant, the paper's row it stands beside): rows of one system named by the paper's
    #: rows, and checked to be on the same documents (CCSBench Table 7's I+C and Full)
    variant_rows: tuple[tuple[str, str], ...] = ()
    #: what the caption adds (a column that is not a metric: what it shows, why n/a)
    note: str = ""


#: a column's key that reads the run's mean prompt tokens (its ``prompt_budget`` record,
#: written by the prompt fitting of lm_eval_tasks/benchmarks/budget.py), not a metric
PROMPT_TOKENS = "prompt_tokens_mean"


@dataclass(frozen=True)
class ShotTable:
    """A paper table whose cell is a zero-shot score and the two-shot score's difference
    from it, one table per level of subsets (DomainSum Table 2): ``keys`` the suite keys of
    each subset's columns, ``headings`` each subset's printed column name."""

    table: str
    keys: tuple[str, ...]
    headings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportPieces:
    """What the report and the analysis commands build for a benchmark beyond its long tables.

    ``layouts``: its papers' tables as :class:`Layout` rows. ``shot_table``: its
    :class:`ShotTable`, or None. ``measure_profile``: the profile of
    :mod:`custom_metrics.analysis.measures` its release computes corpus statistics with
    (its measures draw the report's radar figures and are ``domsum domain-stats``'s
    default). ``statistics_table``: the published table of those statistics per subset,
    shown beside ``domsum domain-stats``. ``correlation_table``: the published table
    correlating them with performance across each level's subsets (``domsum correlate``).
    ``amplitude_figure``: the published figure of change amplitude (``domsum
    change-amplitude``, rebuilt by the report)."""

    layouts: tuple[Layout, ...] = ()
    shot_table: ShotTable | None = None
    measure_profile: str | None = None
    statistics_table: str | None = None
    correlation_table: str | None = None
    amplitude_figure: str | None = None


def piece_name(benchmark: str, table: str) -> str:
    """The report's name of a benchmark's published table or figure: ``Table 2`` of
    ``bench`` is ``bench_table2``, ``Figure 4`` ``bench_figure4``."""
    return f"{benchmark}_{table.lower().replace(' ', '')}"


__all__ = ["Column", "Layout", "ReportPieces", "ShotTable", "piece_name"]
