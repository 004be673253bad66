"""Which metric families a rescore runs, with which keys, settings and options.

``--metrics`` takes any registry family or any single key of one: a key selects its
family and restricts the output, and the cost, to the chosen keys; without it the
task's catalogue families are scored, as a harness run of the task scores them.
"""

from __future__ import annotations

from typing import Any

from custom_metrics import battery, registry
from custom_metrics.hf_models import ModelUnavailable
from lm_eval_tasks import scoring_context, settings
from lm_eval_tasks.catalog import UnknownTask
from lm_eval_tasks.rescoring.options import Options, ScoreError


def parse_metrics(spec: str) -> dict[str, list[str]]:
    """``rouge,dvo,coherence`` -> {family: the keys chosen}, in the registry's key order.

    A family name chooses all its keys; a key chooses itself (and so its family). A
    name that is both a family and one of its keys (``fm``, ``dvo``) is the key: the
    long-standing meaning of ``--metrics fm`` is the facet score without the vanilla
    rating's calls.
    """
    chosen: dict[str, set[str]] = {}
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        try:
            fam = registry.family_of(name)
            keys = {name}
        except KeyError:
            try:
                fam = registry.get(name)
            except KeyError:
                raise ScoreError(f"unknown metric {name!r}; choose a family ({', '.join(registry.names())}) "
                                 f"or one of its keys") from None
            keys = set(fam.key_names)
        chosen.setdefault(fam.name, set()).update(keys)
    return {name: [k for k in registry.get(name).key_names if k in keys] for name, keys in chosen.items()}


def task_selection(task: str | None) -> dict[str, list[str]]:
    """The catalogue's metric families of ``task`` (all their keys): what ``--metrics`` defaults to,
    so a re-scored file reports what a harness run of that task reports."""
    from lm_eval_tasks.catalog import lookup

    if not task:
        raise ScoreError("give --metrics, or --task NAME for the task's own metrics")
    try:
        spec = lookup(task)
    except UnknownTask as exc:
        raise ScoreError(f"--metrics omitted and the task has no catalogue metrics: {exc}") from None
    return {name: list(registry.get(name).key_names) for name in spec.families}


def family_options(name: str, keys: list[str], args: Options, task: str | None,
                   benchmark: str) -> dict[str, Any]:
    """``Context.options`` of one family: what the task's benchmark gives it (CCSBench's focus
    prompt), what the chosen keys ask of it (its record's ``select``), and the flags'
    options its record declares it takes (``max_document_words``, ``vocabulary_file``)."""
    fam = registry.get(name)
    out: dict[str, Any] = benchmark_options(name, args, task, benchmark)
    if fam.select is not None:
        out.update(fam.select(keys))
    flags = {"max_document_words": args.max_document_words, "vocabulary_file": args.vocabulary}
    out.update({k: v for k, v in flags.items() if k in fam.options and v not in (None, "")})
    return out


def benchmark_options(name: str, args: Options, task: str | None, benchmark: str) -> dict[str, Any]:
    """What the task's own benchmark gives family ``name`` (empty for another benchmark's task)."""
    if not (task and benchmark):
        return {}
    from lm_eval_tasks.benchmarks import family_options as provided
    from lm_eval_tasks.catalog import lookup

    try:
        spec = lookup(task)
    except UnknownTask:
        return {}
    return provided(spec, name, args.metadata) if spec.benchmark == benchmark else {}


def family_context(name: str, keys: list[str], args: Options, task: str | None, benchmark: str,
             domain: str | None) -> registry.Context:
    """The registry context one family scores with: the benchmark and domain, its resolved
    settings, the judge where it needs one, and its options."""
    return scoring_context.family_context(name, args.metadata, benchmark=benchmark, subset=domain or "",
                                          options=family_options(name, keys, args, task, benchmark))


def preflight(fam: registry.Family, ctx: registry.Context, args: Options, why: str | None) -> dict:
    """Everything that can fail cheaply, before any family scores; returns what ``describe`` says.

    A model found missing is raised as it is when the family is to be skipped for it
    (:func:`custom_metrics.battery.skips_missing_model`), else as a :class:`ScoreError`.
    """
    if "vocabulary" in fam.needs and not ctx.options.get("vocabulary_file") and not ctx.subset:
        raise ScoreError(f"metric '{fam.name}': give --vocabulary FILE or --benchmark/--domain ({why})")
    if "domain" in fam.needs and not ctx.subset:
        raise ScoreError(f"{fam.name} metrics: give --domain ({why})")
    try:
        if fam.check is not None and settings.resolve(args.metadata, "preflight"):
            fam.check(ctx)
        return fam.describe(ctx) if fam.describe is not None else {}
    except (registry.ScorerUnavailable, ModelUnavailable) as exc:
        if battery.skips_missing_model(fam, exc, ctx.battery):
            raise
        raise ScoreError(str(exc)) from None


def user_vocabulary(task: str | None, selection: dict[str, list[str]], args: Options, benchmark: str) -> dict:
    """A user domain's DVO vocabulary, built from its train split when missing or stale, as a
    harness run of the task builds it before generating (:func:`lm_eval_tasks.preparation.vocab.ensure_vocabulary`);
    what the results record (``user_vocabulary``), or ``{}`` when no chosen family reads a
    domain vocabulary, ``--vocabulary`` names one, or the task is not a user's."""
    needing = [name for name in selection if "vocabulary" in registry.get(name).needs]
    if not needing or args.vocabulary or not task:
        return {}
    from lm_eval_tasks.catalog import lookup

    try:
        spec = lookup(task)
    except UnknownTask:
        return {}
    if spec.source is None or spec.benchmark != benchmark:
        return {}
    from custom_metrics.errors import SuiteError
    from lm_eval_tasks.preparation.vocab import ensure_vocabulary

    try:
        return ensure_vocabulary(spec, args.metadata, progress=settings.resolve(args.metadata, "progress"))
    except SuiteError as exc:
        raise ScoreError(f"task {task}: {', '.join(needing)} has no vocabulary: {exc}") from None


def reads_document(selection: dict[str, list[str]]) -> list[str]:
    """The chosen keys whose family needs the source document (the judge's prompts, BLANC)."""
    return [k for name, keys in selection.items() for k in keys if "document" in registry.get(name).needs]


__all__ = ["family_context", "family_options", "parse_metrics", "preflight", "reads_document",
           "task_selection", "user_vocabulary"]
