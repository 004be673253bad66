"""The papers' tables, built from runs: one :class:`Table` each, written by :mod:`~lm_eval_tasks.report.write`.

* ``<benchmark>_scores``: every run, one row per system, setting and subset, the
  benchmark's headline keys with 95 % bootstrap intervals over documents (CCSBench and
  medqsum tables; the long form of the others).
* ``<benchmark>_settings``: DomainSum Table 2 layout — zero-shot vs few-shot per system
  (a model with all its settings: a chat run is never paired with a plain one) and
  domain, the difference and its paired p-value.
* ``<benchmark>_finetuned``: DomainSum Table 3 — each fine-tuned system on the task it
  was trained on beside its base model (same shots and settings), the difference and
  its p-value.
* ``<benchmark>_cross_domain_<key>``: DomainSum Table 6 — rows the domain a system was
  fine-tuned on, columns the domain evaluated, one matrix per base model and key; every
  evaluated cell is kept, nothing is invented.
* the papers' own layouts (AdaptEval Table 3, CCSBench Tables 4 and 5, with the
  published rows): :mod:`~lm_eval_tasks.report.paper_layouts`.
* ``significance``: every pair of runs on the same documents, per headline key.

Every comparison is on the documents both runs logged and have a value for: the scores
beside a difference are on those documents (so the difference is theirs), each comparison
table shows the shared n and each run's own n, a comparison on fewer documents than a run
logged is listed under its table, runs with no document in common are not compared (a
note says so), and a comparison that cannot be computed shows no difference (its verdict
says why).

Fractions are shown x100 (the papers' scale); DVO is already a percentage.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lm_eval_tasks import catalog
from custom_metrics import registry
from custom_metrics.registry import display_scale as scale
from lm_eval_tasks.report.cross_domain import CrossMatrix, axes, cross_matrix
from lm_eval_tasks.report.formats import counted
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS
from lm_eval_tasks.report.runs import Run, Runs, shared_documents
from lm_eval_tasks.report.systems import short_name
from lm_eval_tasks.report.stats import Comparison, Estimate, aggregation_of, estimate, paired
from lm_eval_tasks.report.verdicts import VERDICT_CAPTION, p_text

#: the keys each benchmark's paper tables print (ordered), from its record's ``headline``;
#: column names are the keys' display names (:func:`custom_metrics.registry.display_name`)
HEADLINE: dict[str, tuple[str, ...]] = {name: rec.headline for name, rec in ALL_RECORDS.items() if rec.headline}


@dataclass
class Table:
    """A titled table of display strings, with the notes that explain its gaps."""

    name: str
    title: str
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    notes: list[str] = field(default_factory=list)
    #: the benchmark's citation, shown once under the first of its tables
    citation: str = ""
    #: one object per row of this run placed beside a paper's published rows: the row and its
    #: check against the paper's protocol (published/protocol.py; written to paper_rows.json)
    paper_rows: list[dict[str, Any]] = field(default_factory=list)
    #: a table too wide for a laptop, as the page shows it: one table per (title, column indices)
    panels: list[tuple[str, list[int]]] = field(default_factory=list)


@dataclass
class Options:
    n_boot: int = 1000
    resamples: int = 1000
    test: str = "permutation"
    seed: int = 1234


class Builder:
    """Builds every table of a set of runs; caches estimates and tests (each computed once)."""

    def __init__(self, runs: Runs, options: Options | None = None) -> None:
        self.runs = runs
        self.opt = options or Options()
        self._est: dict[tuple[int, str], Estimate] = {}
        self._cmp: dict[tuple[int, int, str], Comparison | None] = {}
        self.notes: list[str] = []
        #: the table being built, and every comparison each table shows (report/verdicts.py)
        self.section, self.shown = "", {}

    # ------------------------------------------------------------ numbers

    def est(self, run: Run, key: str, docs: Sequence[str] | None = None) -> Estimate:
        """``key`` of ``run`` on its own documents, or on ``docs`` (those it shares with another run)."""
        k = (id(run), key, None if docs is None else tuple(docs))
        if k not in self._est:
            self._est[k] = estimate(run, key, self.opt.n_boot, self.opt.seed, docs=docs)
            e = self._est[k]
            if e.agrees is False:
                self.notes.append(f"{run.system.label} / {run.task}: {key} refolded from the samples "
                                  f"differs from the results file ({run.values.get(key)}); the "
                                  "samples may belong to another run")
        return self._est[k]

    def compare(self, a: Run, b: Run, key: str) -> Comparison | None:
        k = (id(a), id(b), key)
        if k not in self._cmp:
            self._cmp[k] = paired(a, b, key, self.opt.test, self.opt.resamples, self.opt.seed, self.opt.n_boot)
        if self._cmp[k] is not None:
            self.shown.setdefault(self.section, {})[k] = self._cmp[k]
        return self._cmp[k]

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def headline(self, benchmark: str) -> list[tuple[str, str]]:
        """The keys the benchmark's tables show: its record's headline keys present in its
        runs first (by display name), then the averaged keys of every other family the runs
        report (by key), so a family added to a record shows without another edit."""
        present = {k for r in self.runs.of(benchmark) for k, v in r.values.items()}
        shown = [(k, registry.display_name(k)) for k in HEADLINE.get(benchmark, ()) if k in present]
        covered = {registry.family_of(k).name for k, _ in shown}
        for r in self.runs.of(benchmark):
            for fam in r.spec.families:
                if fam in covered:
                    continue
                covered.add(fam)
                shown += [(k, k) for k in registry.family_keys(fam)
                          if k in present and aggregation_of(k) != "sum" and (k, k) not in shown]
        return shown

    # ------------------------------------------------------------ cells

    @staticmethod
    def number(value: float, key: str) -> str:
        return "n/a" if not math.isfinite(value) else f"{value * scale(key):.2f}"

    def cell(self, run: Run | None, key: str, docs: Sequence[str] | None = None) -> str:
        """The value of ``key`` with its interval, on the run's documents or on ``docs``."""
        if run is None or key not in run.values:
            return "n/a"
        e = self.est(run, key, docs)
        text = self.number(e.value, key)
        if math.isfinite(e.value) and math.isfinite(e.low) and math.isfinite(e.high):
            text += f" [{e.low * scale(key):.2f}, {e.high * scale(key):.2f}]"
        return text

    def pair(self, a: Run | None, b: Run | None, key: str) -> tuple[str, str, str, str]:
        """(``a``'s cell, ``b``'s cell, ``b − a``, p) of one key as display strings.

        Compared runs are shown on the documents both have a value for (the difference and
        the two scores beside it on the same documents); a run without a partner, with no
        document in common with it, or whose comparison was not computed, is shown on its
        own documents with no difference.
        """
        c = None
        if a is not None and b is not None and key in a.values and key in b.values:
            c = self.compare(b, a, key)
        if c is None or not c.computed:
            return self.cell(a, key), self.cell(b, key), "n/a", "n/a"
        docs = list(c.docs)
        return (self.cell(a, key, docs), self.cell(b, key, docs), f"{c.result.delta * scale(key):+.2f}",
                p_text(c.result.p_value))

    def documents(self, a: Run | None, b: Run | None, what: str, names: tuple[str, str],
                  keys: Sequence[tuple[str, str]], notes: list[str]) -> list[str]:
        """The n cells of a compared pair (``a``'s, ``b``'s, shared) and the notes they call for.

        ``what`` names the row (system and subset); ``names`` the two runs in it.
        """
        own = [str(r.n) if r is not None and r.n else "n/a" for r in (a, b)]
        if a is None or b is None:
            return [*own, "—"]
        if not (a.n and b.n):
            self.note(f"{what}: {names[0]} and {names[1]} not compared (no logged samples to pair; "
                      "run lm_eval with --log_samples)")
            return [*own, "n/a"]
        shared = len(shared_documents(a, b))
        if shared == 0:
            self.note(f"{what}: {names[0]} ({counted(a.n, 'document')}) and {names[1]} ({b.n}) share no document; "
                      "not compared")
        elif shared < max(a.n, b.n):
            notes.append(f"{what}: compared on the {counted(shared, 'document')} both runs logged ({names[0]} has "
                         f"{a.n}, {names[1]} {b.n}); the scores beside Δ are on those {shared}")
        for key, name in keys:
            c = self.compare(b, a, key) if key in a.values and key in b.values else None
            if c is not None and 0 < c.n < shared:
                notes.append(f"{what}: {name} compared on {c.n} of the {shared} shared documents "
                             "(the others are not scored on both sides); the scores beside Δ are on those "
                             f"{c.n}")
        return [*own, str(shared)]

    # ------------------------------------------------------------ tables

    def scores(self, benchmark: str) -> Table | None:
        runs = sorted(self.runs.of(benchmark), key=lambda r: (r.system.label, r.shots, order(r)))
        keys = self.headline(benchmark)
        if not runs or not keys:
            return None
        with_level = benchmark in ALL_RECORDS and bool(ALL_RECORDS[benchmark].levels)  # subsets in levels
        header = ["System", "Setting"] + (["Level"] if with_level else []) + ["Subset", "n"] + [n for _, n in keys]
        rows = []
        for r in runs:
            variant = f" ({r.spec.variant})" if r.spec and r.spec.variant else ""
            rows.append([r.system.label, r.setting] + ([r.spec.level or ""] if with_level else [])
                        + [r.subset + variant, str(len(r.samples) or "n/a")]
                        + [self.cell(r, k) for k, _ in keys])
        return Table(f"{benchmark}_scores", f"{paper(benchmark)}: scores per system, setting and subset",
                     header, rows, caption=ci_caption(self.opt))

    def settings(self, benchmark: str) -> Table | None:
        """Zero-shot vs few-shot of each base system per subset (DomainSum Table 2).

        A system is a model with all its settings (chat template, budgets, ...): a row
        compares one system across shots only, never a chat run with a plain one.
        """
        base = [r for r in self.runs.of(benchmark) if not r.system.fine_tuned and not r.spec.variant]
        shots, self.section = sorted({r.shots for r in base}), f"{benchmark}_settings"
        if len(shots) < 2:
            return None
        first, other = shots[0], shots[1:]
        keys = self.headline(benchmark)
        header, panels = ["System", "Subset"], []
        tags = {s: f" ({s}−{first})" if len(other) > 1 else "" for s in other}
        for s in other:
            header += [f"n {first}-shot{tags[s]}", f"n {s}-shot", f"n shared{tags[s]}"]
        for _, name in keys:
            for j, s in enumerate(other):  # a panel: the row's names, the n of s, the metric at s
                panels.append((name + tags[s], [0, 1, *range(2 + 3 * j, 5 + 3 * j), *range(k := len(header), k + 4)]))
                header += [f"{name} {first}-shot{tags[s]}", f"{name} {s}-shot",
                           f"Δ {name} ({s}−{first})", f"p ({name}, {s}−{first})"]
        rows, notes = [], []
        systems = sorted({r.system.identity: r.system for r in base}.values(), key=lambda s: s.label)
        for system in systems:
            for subset in subsets_of(base, benchmark):
                found = {s: self.runs.find(system, benchmark, subset, s) for s in shots}
                if sum(v is not None for v in found.values()) < 1:
                    continue
                row = [system.label, subset]
                for s in other:
                    row += self.documents(found[first], found[s], f"{system.label} / {subset}",
                                          (f"{first}-shot", f"{s}-shot"), keys, notes)
                    notes += self.unpaired(system, benchmark, subset, found, first, s)
                for key, _ in keys:
                    for s in other:
                        row += list(self.pair(found[first], found[s], key))
                rows.append(row)
        if not rows:
            return None
        return Table(f"{benchmark}_settings",
                     f"{paper(benchmark)}: {first}-shot vs " + ", ".join(f"{s}-shot" for s in other)
                     + " (DomainSum Table 2 layout)", header, rows,
                     caption=pair_caption() + " " + ci_caption(self.opt) + " " + test_caption(self.opt),
                     notes=notes, panels=panels)

    def unpaired(self, system, benchmark: str, subset: str, found: dict, first: int, s: int) -> list[str]:
        """Where one setting of a system is missing but another system of the same model has
        it: say that the two are not compared (they differ in settings, not only shots)."""
        out = []
        for missing in (first, s):
            if found[missing] is not None or found[first if missing == s else s] is None:
                continue
            others = sorted({r.system.label for r in self.runs.of(benchmark)
                             if r.system.model == system.model and r.system.identity != system.identity
                             and r.subset == subset and r.shots == missing and not r.spec.variant})
            if others:
                out.append(f"{system.label} / {subset}: no {missing}-shot run with the same settings; "
                           f"not compared with {', '.join(others)} ({missing}-shot), whose settings differ")
        return out

    def finetuned(self, benchmark: str) -> Table | None:
        """Each fine-tuned system beside the model it was tuned from (DomainSum Table 3)."""
        tuned, self.section = [r for r in self.runs.of(benchmark) if r.system.fine_tuned], f"{benchmark}_finetuned"
        if not tuned:
            return None
        keys = self.headline(benchmark)
        header, panels = ["System", "Trained on", "Subset", "Setting", "n", "n base", "n shared"], []
        for _, name in keys:
            panels.append((name, [*range(7), *range(len(header), len(header) + 4)]))
            header += [f"{name}", f"{name} base", f"Δ {name}", f"p ({name})"]
        rows, notes = [], []
        for r in sorted(tuned, key=lambda r: (r.system.label, order(r), r.shots)):
            if r.system.trained_on and lookup_subset(r.system.trained_on) not in (None, r.subset):
                continue  # an off-domain evaluation: the cross-domain matrix holds it
            base_run = self.base_run(r)
            if base_run is None:
                notes.append(f"{r.system.label}: no run of its base model with the same settings on "
                             f"{r.task} (Δ is n/a)")
            row = [r.system.label, r.system.trained_on or "unknown", r.subset, r.setting]
            n_base, n_tuned, n_shared = self.documents(base_run, r, f"{r.system.label} / {r.subset} ({r.setting})",
                                                       ("the base model", "the fine-tuned system"), keys, notes)
            row += [n_tuned, n_base, n_shared]
            for key, _ in keys:
                base_cell, tuned_cell, diff, p = self.pair(base_run, r, key)
                row += [tuned_cell, base_cell, diff, p]
            rows.append(row)
        if not rows:
            return None
        return Table(f"{benchmark}_finetuned", f"{paper(benchmark)}: fine-tuned vs base model, in-domain "
                     "(DomainSum Table 3 layout)", header, rows,
                     caption=pair_caption() + " " + ci_caption(self.opt) + " " + test_caption(self.opt),
                     notes=notes, panels=panels)

    def base_run(self, run: Run) -> Run | None:
        setup = run.system.base_setup
        if setup is None:
            return None
        base = next((s for s in sorted(self.runs.systems(), key=lambda s: (s.name != run.system.name, s.label))
                     if s.setup == setup), None)
        if base is None:
            return None
        return self.runs.find(base, run.benchmark, run.subset, run.shots, run.spec.variant)

    def cross_domain(self, benchmark: str) -> list[Table]:
        """Source (fine-tuning subset) x target (evaluated subset) matrices per base model (Table 6)."""
        out = []
        for g in cross_domain_groups(self.runs, benchmark):
            base_label = base_label_of(self.runs, g.base)
            for key, name in self.headline(benchmark):
                cm = g.matrix(key, lambda run, k=key: self.est(run, k).value)
                header = ["trained on \\ evaluated on"] + cm.targets
                rows = [[s] + [self.number(v, key) if (s, t) in g.cells else "—" for t, v in zip(cm.targets, row)]
                        for s, row in zip(cm.sources, cm.matrix)]
                out.append(Table(f"{benchmark}_cross_domain_{key}",
                                 f"{paper(benchmark)}: cross-domain {name} of {base_label} fine-tuned per "
                                 "domain (DomainSum Table 6 layout)", header, rows,
                                 caption="Rows: the domain the system was fine-tuned on; columns: the "
                                 "domain evaluated; the diagonal is in-domain; — = not evaluated."))
        return out

    def significance(self) -> Table | None:
        header = ["Benchmark", "Subset", "Key", "A", "B", "A score", "B score", "A − B", "p", "n shared",
                  "n A", "n B"]
        rows, notes, self.section = [], [], "significance"
        for benchmark in self.runs.benchmarks():
            runs = [r for r in self.runs.of(benchmark) if r.samples]
            for subset in subsets_of(runs, benchmark):
                here = sorted((r for r in runs if r.subset == subset),
                              key=lambda r: (r.system.fine_tuned, r.system.label, r.shots, r.spec.variant))
                for a, b in itertools.combinations(here, 2):
                    if (a.shots, a.spec.variant) != (b.shots, b.spec.variant):
                        continue  # one system across settings: the settings table tests it
                    shared = len(shared_documents(a, b))
                    if shared == 0:
                        self.note(f"{benchmark} / {subset}: {a.series} ({counted(a.n, 'document')}) and {b.series} "
                                  f"({b.n}) share no document; not compared")
                        continue
                    if shared < max(a.n, b.n):
                        notes.append(f"{benchmark} / {subset}: {a.series} and {b.series} compared on the "
                                     f"{counted(shared, 'document')} both logged (of {a.n} and {b.n})")
                    for key, name in self.headline(benchmark):
                        if key not in a.values or key not in b.values:
                            continue
                        c = self.compare(a, b, key)
                        if c is None:
                            continue
                        if 0 < c.n < shared:
                            notes.append(f"{benchmark} / {subset}: {name} of {a.series} and {b.series} compared "
                                         f"on {c.n} of the {shared} shared documents (the others are not scored "
                                         "on both sides)")
                        docs = list(c.docs) if c.computed else None  # not computed: each on its own documents
                        rows.append([benchmark, subset, name, a.series, b.series,
                                     self.number(self.est(a, key, docs).value, key),
                                     self.number(self.est(b, key, docs).value, key),
                                     f"{c.result.delta * scale(key):+.2f}" if c.computed else "n/a",
                                     p_text(c.result.p_value) if c.computed else "n/a",
                                     str(c.n), str(a.n), str(b.n)])
        if not rows:
            return None
        return Table("significance", "Paired significance tests between systems on the same documents "
                     "and setting",
                     header, rows, caption="A score, B score: each system on the n shared documents both "
                     "have a value for (n A, n B: the documents each logged); A − B and p on the same documents; "
                     "where A − B is n/a (not computed), each score is on its run's own documents. "
                     + test_caption(self.opt) + " " + VERDICT_CAPTION, notes=notes)

    def all(self) -> list[Table]:
        tables: list[Table | None] = []
        for b in self.runs.benchmarks():
            tables.append(self.settings(b))
            tables.append(self.finetuned(b))
            tables.extend(self.cross_domain(b))
            tables.append(self.scores(b))
        tables.append(self.significance())
        return [t for t in tables if t is not None]


# ---------------------------------------------------------------- helpers


@dataclass
class CrossGroup:
    """The zero-shot runs of the systems fine-tuned from one base model, by (source, target)."""

    benchmark: str
    #: the setup of the base system (model and settings, :attr:`~lm_eval_tasks.report.systems.System.setup`)
    base: tuple
    cells: dict[tuple[str, str], Run]

    def matrix(self, key: str, value: Callable[[Run], float]) -> CrossMatrix:
        """The DomainSum Table 6 matrix of ``value(run)`` per cell (rows and columns in
        catalogue order; a cell not evaluated is nan)."""
        sources, targets = axes(self.benchmark, self.cells, "none")
        values = {(s, t): value(self.cells[(s, t)]) for s in sources for t in targets if (s, t) in self.cells}
        return cross_matrix(self.benchmark, str(self.base[0]), key, values, group_by="none")


def cross_domain_groups(runs: Runs, benchmark: str) -> list[CrossGroup]:
    """Per base model, every evaluated (fine-tuning subset, evaluated subset) cell; one
    group per base with at least two cells (a single cell is the fine-tuned table's row)."""
    tuned = [r for r in runs.of(benchmark)
             if lookup_subset(r.system.trained_on) and not r.spec.variant and r.shots == 0]
    out = []
    for base in sorted({r.system.base_setup or r.system.setup for r in tuned}, key=str):
        group = [r for r in tuned if (r.system.base_setup or r.system.setup) == base]
        cells = {(lookup_subset(r.system.trained_on), r.subset): r for r in group}
        if len({s for s, _ in cells}) * len({t for _, t in cells}) >= 2:
            out.append(CrossGroup(benchmark, base, cells))
    return out


def left_out_table(runs: Runs) -> list[Table]:
    """``runs_left_out``: each task of a results file the report does not use, with the
    reason (none: no table). Why a table: the page names every run it leaves out beside
    the tables it left it out of, and ``tables/runs_left_out.csv`` lists them for a script."""
    if not runs.left_out:
        return []
    rows = [[str(x.results_file), x.task, x.system, x.reason] for x in runs.left_out]
    return [Table("runs_left_out", "Runs left out", ["Results file", "Task", "System", "Why left out"], rows,
                  caption=f"{counted(len(rows), 'task')} of results files under the folders given that no table, "
                          "score or comparison above uses; every run used is listed under Runs.")]


def pair_caption() -> str:
    return ("Scores beside a Δ are on the documents both compared runs logged (n shared) and have a value "
            "for, so Δ is their difference; a run's own document count is its n, and a comparison on fewer "
            "documents than a run logged is listed below the table. A score without a Δ is on the "
            "run's own documents. A row is one system (a model with all its settings) across shots, or "
            "a fine-tuned system beside its base; systems that differ in other settings (a chat "
            "template, a budget) are compared with each other in the significance table. "
            + VERDICT_CAPTION)


def ci_caption(opt: Options) -> str:
    return (f"Brackets: 95 % percentile bootstrap interval over documents ({opt.n_boot} resamples, "
            f"seed {opt.seed}) from the logged per-document scores." if opt.n_boot > 0 else "")


def test_caption(opt: Options) -> str:
    what = ("two-sided paired permutation test (documents' scores swapped between the two runs)"
            if opt.test == "permutation" else "one-sided paired bootstrap test (Berg-Kirkpatrick et al. 2012)")
    return f"p: {what}, {opt.resamples} resamples (exact when 2^n is fewer), seed {opt.seed}."


def paper(benchmark: str) -> str:
    """The benchmark's title in headings (its record's ``title``)."""
    rec = ALL_RECORDS.get(benchmark)
    return rec.title if rec is not None else benchmark


def order(run: Run) -> int:
    subs = list(catalog.subsets(run.benchmark)) if run.benchmark else []
    return subs.index(run.subset) if run.subset in subs else len(subs)


def ordered_subsets(benchmark: str, present: set[str | None]) -> list[str]:
    subs = [s for s in catalog.subsets(benchmark) if s in present]
    return subs + sorted(str(s) for s in present - set(subs) if s)


def subsets_of(runs: Sequence[Run], benchmark: str) -> list[str]:
    return ordered_subsets(benchmark, {r.subset for r in runs})


def lookup_subset(task: str | None) -> str | None:
    """The subset of a catalogue task name (a run card's ``task``), None if unknown."""
    if not task:
        return None
    try:
        return catalog.lookup(task).subset
    except catalog.UnknownTask:
        return None


def base_label_of(runs: Runs, setup: tuple) -> str:
    """The label of the system of ``setup`` (a cross-domain group's base), else its
    model's name with its settings."""
    system = next((s for s in sorted(runs.systems(), key=lambda s: s.label) if s.setup == setup), None)
    if system is not None:
        return system.label
    from lm_eval_tasks.report.systems import setting_text

    settings = ", ".join(setting_text(k, v) for k, v in (setup[3] if len(setup) > 3 else ()))
    return short_name(setup[0]) + (f" [{settings}]" if settings else "")


__all__ = ["Builder", "CrossGroup", "HEADLINE", "Options", "Table", "base_label_of", "left_out_table",
           "cross_domain_groups"]
