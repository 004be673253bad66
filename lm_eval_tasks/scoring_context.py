"""THE scoring context of a metric family: one builder for the harness, ``rescore`` and
the report.

Why one: the context a family scores with (its resolved settings, the judge, the
benchmark's scoring conventions, task-provided options) used to be built in several
places, each a little differently, so a family could score a run one way and re-score
it another. Conventions arrive here from the benchmark's record
(:attr:`lm_eval_tasks.benchmarks.record.Benchmark.conventions`) as the defaults of unset
settings, so the metric library itself names no benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from custom_metrics import registry
from lm_eval_tasks import settings
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS


def conventions(benchmark: str) -> dict[str, tuple[Any, str]]:
    """``setting -> (value, where it comes from)`` of ``benchmark``'s record (empty for an
    unknown or empty name: the library defaults apply)."""
    rec = ALL_RECORDS.get(benchmark)
    if rec is None:
        return {}
    return {key: (c.value, f"release convention of {benchmark}") for key, c in rec.conventions.items()}


def family_context(name: str, metadata: Mapping[str, Any] | None = None, *, benchmark: str = "",
                   subset: str = "", options: Mapping[str, Any] | None = None) -> registry.Context:
    """The context family ``name`` scores with: its settings resolved from ``metadata``
    (task metadata > environment > default), the judge where it needs one, the
    benchmark's conventions, whether it is one of the benchmark's optional families (a
    battery's: :attr:`~custom_metrics.registry.Context.battery`), and ``options``."""
    fam = registry.get(name)
    missing = [key for key in fam.reads if key not in settings.SETTINGS]
    if missing:  # tests/unit/test_import_rules.py checks every record; here it is one line, not a KeyError
        raise settings.SettingError(f"metric family {name} reads {', '.join(missing)}, which "
                                    f"no settings row declares (a family module declares its own in SETTING_ROWS)")
    meta = dict(metadata or {})
    rec = ALL_RECORDS.get(benchmark)
    return registry.Context(
        benchmark=benchmark, subset=subset, battery=rec is not None and name in rec.optional_families,
        settings=settings.resolve_many(meta, fam.settings),
        conventions=conventions(benchmark),
        judge=settings.judge_config(meta) if "judge" in fam.needs else None,
        options=dict(options or {}), progress=settings.resolve(meta, "progress"))


__all__ = ["conventions", "family_context"]
