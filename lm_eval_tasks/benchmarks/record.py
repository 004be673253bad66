"""The record type every benchmark of the suite is declared with, and a user's domain too.

Why one type: a benchmark's facts (subsets and levels, data sources, generation budgets
and stops, metric families and the keys its tables show first, scoring conventions,
version and citation) used to live in eight modules; a contributor changing one fact had
to find them all. Each paper now declares one :class:`Benchmark` in its package
(``lm_eval_tasks/benchmarks/<paper>/``; the shape of lighteval's task configs and HELM's
run specs: every fact beside the paper's citation), and everything else reads it: the
catalogue expands it into tasks, groups and YAMLs, the loader takes its hub sources,
the report its headline keys and title, scoring its conventions as setting defaults.

A package's ``BENCHMARK`` is its record with its behaviour's hooks added as references
(``build_docs``, ``stop_sequences``, ``family_options``, each a function of a task's
catalogue row), so a consumer holding a task's row calls them without looking a module
up by name. This module imports no loader, no harness and
no metric code: records are plain data and functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from custom_metrics.setting import Setting
from lm_eval_tasks.benchmarks.layout import ReportPieces
from lm_eval_tasks.data.records import HubSource


@dataclass(frozen=True)
class Variant:
    """One kind of task a benchmark expands into, for every subset (or ``subsets``).

    ``group``: the name of the group averaging the variant's tasks over ``group_families``
    (None: no group; a group of mixed settings is a list, never a mean).
    """

    shots: int = 0
    variant: str = ""
    extra_families: tuple[str, ...] = ()
    subsets: tuple[str, ...] | None = None
    group: str | None = None


@dataclass(frozen=True)
class Convention:
    """A scoring setting's value as the paper's release scores, and where that comes from:
    the default the metric library receives for the benchmark's tasks (an explicit
    setting still wins)."""

    value: Any
    source: str


@dataclass(frozen=True)
class Release:
    """The authors' release of a benchmark's splits, which ``domsum prepare-data --release``
    converts into the mirror: its reader and the order its numbered topic files follow."""

    #: ``(folder, topic_order) -> {(subset, split): records}``: every file read and checked, none written
    read: Callable[[Any, tuple[str, ...]], dict[tuple[str, str], list[dict]]]
    #: the subsets the release numbers ``topic1``, ``topic2``, ... (``--topic-order``'s default)
    topic_order: tuple[str, ...] = ()


@dataclass(frozen=True)
class Benchmark:
    """Every fact of one benchmark.

    ``levels`` groups the subsets (DomainSum's genre/style/topic); ``subsets`` lists
    them when there are no levels. ``families`` are the metric families every task
    reports (``subset_families`` adds per subset: CCSBench's controls). ``max_gen_toks``
    and ``until`` are per subset and per shot count where they differ.
    """

    name: str
    title: str
    citation: str
    version: float
    families: tuple[str, ...]
    variants: tuple[Variant, ...]
    max_gen_toks: int | Mapping[str, int]
    until: tuple[str, ...] | Mapping[int, tuple[str, ...]]
    headline: tuple[str, ...] = ()
    levels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    subsets: tuple[str, ...] = ()
    subset_families: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    hub_sources: Mapping[str, HubSource] = field(default_factory=dict)
    conventions: Mapping[str, Convention] = field(default_factory=dict)
    system_prompt: bool = False
    #: the group listing every level of both settings (DomainSum's), never averaged
    whole_group: bool = False
    #: the benchmark's battery (medqsum's): families a run may leave out, each then NaN and counted
    #: under ``<name>_skipped`` while the others still score: one whose model is missing (at
    #: scoring time, or at a re-scoring's preflight) instead of failing the run, and one the
    #: ``family_choice`` row does not pick
    optional_families: tuple[str, ...] = ()
    #: the settings row (one of ``settings``) whose value, a comma list, picks the
    #: ``optional_families`` a run scores (empty: all)
    family_choice: Setting | None = None
    #: the settings rows the benchmark owns (its data filters, prompt texts, column names),
    #: collected by :mod:`lm_eval_tasks.settings`
    settings: tuple[Setting, ...] = ()
    #: the report's pieces the benchmark declares (its papers' table layouts, published
    #: tables and figures the report rebuilds), read by the report instead of a name
    report: ReportPieces = field(default_factory=ReportPieces)
    #: the paper's fine-tuning settings, by method (``lora``, ``prefix``, ``full``): the values
    #: ``python -m finetune --preset <benchmark>`` starts from (collected by :mod:`finetune.presets`)
    finetune_preset: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: the authors' release that ``domsum prepare-data --release`` converts (the package's
    #: ``BENCHMARK`` holds it), None: the benchmark has none
    release: Release | None = field(default=None, compare=False, repr=False)
    #: ``(spec, shots, metadata, split) -> (records, load facts)``: the split's records of the
    #: task ``spec`` with their ``prompt`` and ``summary``
    build_docs: Callable[..., tuple[list[dict], dict]] | None = field(default=None, compare=False, repr=False)
    #: ``(spec, metadata) -> stops or None``: stops a prompt setting imposes instead of ``until``
    stop_sequences: Callable[[Any, dict], tuple[str, ...] | None] | None = field(default=None, compare=False,
                                                                                 repr=False)
    #: ``(spec, family, metadata) -> options``: ``Context.options`` the benchmark gives a family
    family_options: Callable[[Any, str, dict], dict[str, Any]] | None = field(default=None, compare=False,
                                                                              repr=False)
    #: ``(spec, fields, metadata, where) -> None``: raises a ``DataError`` when a record with these
    #: fields cannot feed the task (CCSBench's control and full-text columns): the data check
    #: asks it of a split's first record before any model loads
    check_fields: Callable[[Any, list[str], dict, str], None] | None = field(default=None, compare=False,
                                                                            repr=False)

    def __post_init__(self) -> None:
        reported = {*self.families, *(f for fams in self.subset_families.values() for f in fams),
                    *(f for v in self.variants for f in v.extra_families)}
        stray = [f for f in self.optional_families if f not in reported]
        if stray:
            raise ValueError(f"benchmark {self.name}: optional_families {stray} are not families its tasks report")
        if self.family_choice is not None and self.family_choice not in self.settings:
            raise ValueError(f"benchmark {self.name}: family_choice {self.family_choice.key!r} is not one of its "
                             f"settings rows")

    def all_subsets(self) -> tuple[str, ...]:
        """The subsets, in level order when there are levels."""
        return tuple(d for level in self.levels.values() for d in level) if self.levels else self.subsets

    def level_of(self, subset: str) -> str | None:
        return next((lv for lv, subs in self.levels.items() if subset in subs), None)

    def gen_budget(self, subset: str) -> int:
        return self.max_gen_toks if isinstance(self.max_gen_toks, int) else self.max_gen_toks[subset]

    def stops(self, shots: int) -> tuple[str, ...]:
        return self.until if isinstance(self.until, tuple) else self.until[shots]

    def task_families(self, subset: str, variant: Variant) -> tuple[str, ...]:
        return (*self.families, *self.subset_families.get(subset, ()), *variant.extra_families)


@dataclass(frozen=True)
class TaskSpec:
    """One leaf task of the suite.

    ``shots`` demonstrations are built into the prompt by the benchmark's record
    builder (not by the harness's sampler); the harness reports them as ``n-shot``.
    ``variant`` is the name suffix's meaning: ``""`` plain, ``"judged"`` (LLM judge),
    ``"fm"`` (Facet-aware Metric), ``"hard"`` (CCSBench ``Attribute: Value`` lines).
    ``families`` are metric-family names of :mod:`custom_metrics.registry`.
    """

    name: str
    benchmark: str
    subset: str
    shots: int
    variant: str
    families: tuple[str, ...]
    max_gen_toks: int
    until: tuple[str, ...]
    level: str | None = None
    #: a user domain's data source and prompts (:class:`lm_eval_tasks.benchmarks.own.configs.DomainSource`),
    #: None for the suite's benchmarks, whose data sources are the mirror and the hub
    source: Any = field(default=None, compare=False, repr=False)
    #: the benchmark's record (its facts and its behaviour's hooks), held, not looked up by name
    record: Benchmark | None = field(default=None, compare=False, repr=False)

    @property
    def domain(self) -> str:
        """The subset, under the name the domain-shift papers use."""
        return self.subset

    @property
    def hub_source(self):
        """The hub dataset this subset comes from, or None (mirror only)."""
        return self.record.hub_sources.get(self.subset) if self.record is not None else None

    @property
    def paper(self) -> str:
        return self.source.citation if self.source is not None else self.record.citation


def task_name(benchmark: str, subset: str, shots: int, variant: str) -> str:
    """The suite's naming rule: ``<benchmark>_<subset>[_<k>shot][_<variant>]``."""
    return f"{benchmark}_{subset}" + (f"_{shots}shot" if shots else "") + (f"_{variant}" if variant else "")


def subset_docs(behaviour: Callable[[], Callable[..., tuple[list[dict], dict]]]) -> Callable[..., tuple[list[dict], dict]]:
    """A :attr:`Benchmark.build_docs` hook for a benchmark whose behaviour builds a split's
    records from the task's subset, shots and name: ``behaviour()`` returns that function,
    imported when the hook first runs (the behaviour reads the settings and the loader,
    which read every record's facts, so a package's facts stay importable without it)."""

    def build_docs(spec: TaskSpec, shots: int, metadata: dict, split: str = "test") -> tuple[list[dict], dict]:
        """The records of ``split`` for the task ``spec`` with their prompts, and the load facts."""
        return behaviour()(spec.subset, shots, spec.name, metadata, split)

    return build_docs


__all__ = ["Benchmark", "Convention", "Release", "TaskSpec", "Variant", "subset_docs", "task_name"]
