"""The generated parts of each task folder's README (``lm_eval_tasks/<benchmark>/README.md``):
the subset (and level) table and the metric list.

Why generated: the README is the harness's task README template, mostly prose a person
writes (the paper, its prompts, which number reproduces which table), but its subset table
and its metric list are facts the benchmark's record and the metric records already hold.
Kept by hand they went stale when a family gained a key or a benchmark a subset. So
:mod:`lm_eval_tasks.reference` writes them between its markers, like the generated parts
of ``docs/`` (``python -m lm_eval_tasks.reference --write``), and ``tests/unit/test_docs.py``
fails when one differs from the records. The prose around the markers stays as written.

Both tables read :class:`~lm_eval_tasks.catalog.TaskSpec` rows and the metric records only,
so they describe any list of tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from custom_metrics.cells import md_escape
from lm_eval_tasks import catalog


def _code(items: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in items)


def _kind(spec: catalog.TaskSpec) -> str:
    """The task's name after ``<benchmark>_<subset>``: ``""``, ``_2shot``, ``_judged``, ..."""
    return spec.name[len(f"{spec.benchmark}_{spec.subset}"):]


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def reported_by(specs: Sequence[catalog.TaskSpec], family: str) -> str:
    """Which of ``specs`` report ``family``, in the fewest words the names allow: every task,
    the tasks of some name suffixes, of some subsets, of both, or else their names."""
    having = [t for t in specs if family in t.families]
    if len(having) == len(specs):
        return "every task"
    kinds, subsets = _unique([_kind(t) for t in having]), _unique([t.subset for t in having])
    by_kind = having == [t for t in specs if _kind(t) in kinds]
    by_subset = having == [t for t in specs if t.subset in subsets]
    kind_text = " and ".join("tasks without a suffix" if k == "" else f"`{k}` tasks" for k in kinds)
    if by_kind:
        return kind_text
    subset_text = f"subset{'s' if len(subsets) > 1 else ''} {_code(subsets)}"
    if by_subset:
        return f"every task of {subset_text}"
    if having == [t for t in specs if _kind(t) in kinds and t.subset in subsets]:
        return f"{kind_text} of {subset_text}"
    return _code([t.name for t in having])


def metric_table(specs: Sequence[catalog.TaskSpec]) -> str:
    """One row per metric key the tasks report: its display name, unit, which direction is
    better (higher, lower or neither, from the key's record) and which tasks report it."""
    from custom_metrics import registry

    rows = ["| key | name | unit | better | family | reported by |", "|---|---|---|---|---|---|"]
    for family in _unique([f for t in specs for f in t.families]):
        where = reported_by(specs, family)
        for k in registry.get(family).keys:
            rows.append(f"| `{k.name}` | {md_escape(k.label)} | {k.unit} | {k.better} | `{family}` | {where} |")
    return "\n".join(rows)


def _hub(source) -> str:
    if source is None:
        return "mirror only"
    return (f"`{source.path}`" + (f" config `{source.name}`" if source.name else "")
            + f", `{source.document}` → `{source.summary}`")


def subset_table(benchmark: str) -> str:
    """One row per subset of a suite benchmark: its level (where the benchmark has levels), its
    tasks (the plain one, then the other name suffixes) and its hub dataset (where the
    record names hub sources; the others come from a local mirror)."""
    record = catalog.record(benchmark)
    levels, hub = bool(record.levels), bool(record.hub_sources)
    head = [*(["level"] if levels else []), "subset", "tasks", *(["hub dataset, document → summary"] if hub else [])]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for subset in record.all_subsets():
        tasks = catalog.select(benchmark, subsets=(subset,))
        names = [t.name if not _kind(t) else _kind(t) for t in tasks]
        cells = [*([record.level_of(subset) or ""] if levels else []), f"`{subset}`", _code(names),
                 *([_hub(record.hub_sources.get(subset))] if hub else [])]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def sections() -> dict[str, tuple[str, Callable[[], str]]]:
    """The README sections :mod:`lm_eval_tasks.reference` keeps: ``<benchmark>-subsets`` and
    ``<benchmark>-metrics`` of every suite benchmark -> (page, renderer)."""
    out: dict[str, tuple[str, Callable[[], str]]] = {}
    for bench in catalog.BENCHMARKS:
        page = f"lm_eval_tasks/{bench}/README.md"
        out[f"{bench}-subsets"] = (page, lambda b=bench: subset_table(b))
        out[f"{bench}-metrics"] = (page, lambda b=bench: metric_table(catalog.select(b)))
    return out


__all__ = ["metric_table", "reported_by", "sections", "subset_table"]
