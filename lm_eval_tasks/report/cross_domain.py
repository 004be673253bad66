"""Cross-domain evaluation matrices (DomainSum Figure 5, Table 6): the one implementation.

:func:`cross_matrix` builds a source x target matrix and its difference to in-domain
fine-tuning from any cells; ``domsum cross-domain`` feeds it the results of a folder
per fine-tuning domain (:func:`write_cross_domain`), the report (:mod:`.tables`,
:mod:`.figures`) the runs its run cards place in a matrix.

Layout ``domsum cross-domain`` reads: ``ROOT/<source>/<model>/results_*.json`` (any depth below ``<source>``,
e.g. ``domsum cross-domain-train``'s ``ROOT/<source>/eval/<model>/``): ``<model>``
fine-tuned on domain ``<source>`` and evaluated on the zero-shot plain task of some
target domains. ``<source>`` may also be ``base`` (the model before fine-tuning) or
any other name; such rows have no in-domain cell of their own.

For every benchmark, model and metric (default ``rouge_geo`` and ``bertscore_f1``,
shown x100) it builds the source x target matrix ``M`` of every cell that exists in
the results, and the difference to in-domain fine-tuning

    diff[s, t] = M[s, t] - M[t, t]

(negative: worse than the model fine-tuned on the target itself). Why one matrix and
not one per level: a model fine-tuned on a genre-level domain (cnndm) and evaluated on
a style-level one (cnn) is a real cross-domain result, and splitting by level would
drop it. Rows are the sources present, columns the targets present, both in catalogue
order; no row or column is invented. ``--group-by level`` (default) orders and labels
rows and columns by DomainSum level (level column, separators in the heat maps),
``--group-by none`` lists them flat (as the report does). A cell is n/a when its result is missing; a
difference is n/a exactly where ``M[s, t]`` or ``M[t, t]`` is missing; the notes list
both.

Writes into ``--out``:

* ``cross_domain.md``: every matrix and difference matrix, and the notes;
* ``cross_domain.csv``: one row per existing cell (benchmark, model, metric, source,
  target, their levels, value, the target's in-domain value, difference);
* ``cross_domain.json``: ``published``, DomainSum Table 6's values of every train -> test
  pair and metric the matrices hold, beside the user's cell, cited, with ``comparable``,
  ``differences`` [{field, run, paper}] and the sentence (:func:`published_beside`), also a
  section of ``cross_domain.md``;
* ``cross_<benchmark>_<metric>_<model>.md``: one matrix with its difference;
* ``cross_<benchmark>_<metric>_<model>.png`` (scores, sequential colours, in-domain
  cells outlined) and ``..._diff.png`` (differences, diverging colours centred at 0).
  A heat map with no finite cell is not drawn; the notes say so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from custom_metrics.cells import frame_csv
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.domainsum.record import RECORD as DOMAINSUM
from lm_eval_tasks.report.formats import fmt, markdown_table
from custom_metrics.registry import display_scale as scale
from lm_eval_tasks.results import load_results

#: metric key -> label in tables and figures
METRICS = {"rouge_geo": "ROUGE", "bertscore_f1": "BERTScore F1"}
GROUP_BY = ("level", "none")
#: source folder names that hold the model before fine-tuning (``cross-domain-train
#: --include-base``); listed first, as the papers' zero-shot row
BASE_SOURCES = ("base",)
#: group name of rows that are not a domain of the benchmark
OTHER_GROUP = "other"


@dataclass
class CrossMatrix:
    """One source x target matrix of one benchmark, model and metric (values scaled to
    the papers' 0-100 where the metric is a fraction)."""

    benchmark: str
    model: str
    metric: str
    sources: list[str]
    targets: list[str]
    matrix: np.ndarray
    diff: np.ndarray
    #: label -> group name (level) for rows and columns; empty with ``--group-by none``
    groups: dict[str, str] = field(default_factory=dict)

    @property
    def stem(self) -> str:
        return f"cross_{self.benchmark}_{self.metric}_{self.model}"

    def cell(self, source: str, target: str) -> float:
        """``M[source, target]`` (KeyError when either is not in the matrix)."""
        return float(self.matrix[self.sources.index(source), self.targets.index(target)])

    def missing_cells(self) -> list[str]:
        """``source->target`` of the n/a cells."""
        return [f"{s}->{t}" for i, s in enumerate(self.sources) for j, t in enumerate(self.targets)
                if not math.isfinite(self.matrix[i, j])]

    def no_in_domain(self) -> list[str]:
        """Targets whose in-domain cell ``M[t, t]`` is missing: their differences are n/a."""
        return [t for t in self.targets if not math.isfinite(self.in_domain(t))]

    def in_domain(self, target: str) -> float:
        """``M[target, target]``, or nan when that row or cell does not exist."""
        if target not in self.sources:
            return math.nan
        return self.cell(target, target)


# ------------------------------------------------------------------ reading


def plain_zero_shot(task: str) -> tuple[str, str] | None:
    """(benchmark, domain) when ``task`` is a catalogue leaf evaluated zero-shot and
    plain (no judge/FM/hard variant), the cross-domain setting; else None."""
    spec = catalog.all_tasks().get(task)
    if spec is None or spec.shots or spec.variant:
        return None
    return spec.benchmark, spec.subset


def load_cross(root: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """Tidy frame of the results under ``root`` with a ``source`` column (the folder
    name: the fine-tuning domain), plain zero-shot catalogue tasks only, and the
    problems found (unreadable files, skipped tasks)."""
    root = Path(root)
    frames, problems = [], []
    sources = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not sources:
        problems.append(f"{root}: no <source>/ folders")
    for src in sources:
        res = load_results([(src, "fine-tuned")])
        problems += res.problems
        f = res.frame
        keep = f["task"].map(lambda t: plain_zero_shot(t) is not None)
        skipped = sorted(set(f.loc[~keep, "task"]))
        if skipped:
            problems.append(f"{src.name}: not a plain zero-shot suite task, left out: "
                            + ", ".join(skipped))
        f = f[keep].copy()
        f["results_file"] = f["source"]
        f["source"] = src.name
        frames.append(f)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["source", "model", "task", "benchmark", "level", "domain", "metric", "filter", "value", "results_file"])
    return frame, problems


# ------------------------------------------------------------------ matrices


def group_of(benchmark: str, name: str) -> str:
    """The group a row/column label belongs to: the DomainSum level of a domain, the
    benchmark for other benchmarks' domains, ``base`` rows their own, else ``other``."""
    if name in BASE_SOURCES:
        return name
    if name in catalog.subsets(benchmark):
        return catalog.level_of(benchmark, name) or benchmark
    return OTHER_GROUP


def domain_order(benchmark: str, group_by: str = "level") -> list[str]:
    """The benchmark's domains in catalogue order; with ``group_by="level"`` stably
    sorted by level (levels in the order the catalogue first names them), so each
    level's domains are adjacent whatever the catalogue's row order."""
    order = list(catalog.subsets(benchmark))
    if group_by != "level":
        return order
    levels = list(dict.fromkeys(group_of(benchmark, d) for d in order))
    return sorted(order, key=lambda d: levels.index(group_of(benchmark, d)))


def source_order(benchmark: str, sources: Sequence[str], group_by: str = "level") -> list[str]:
    """Base rows first, then the benchmark's domains as :func:`domain_order` lists
    them, then any other folder names alphabetically."""
    order = domain_order(benchmark, group_by)

    def key(s: str) -> tuple:
        if s in BASE_SOURCES:
            return (0, BASE_SOURCES.index(s), "")
        if s in order:
            return (1, order.index(s), "")
        return (2, 0, s)

    return sorted(set(sources), key=key)


def axes(benchmark: str, pairs: Iterable[tuple[str, str]], group_by: str = "level") -> tuple[list[str], list[str]]:
    """(rows, columns) of a matrix of the (source, target) ``pairs``: the sources present
    (:func:`source_order`), the benchmark's domains evaluated (:func:`domain_order`)."""
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}; got {group_by!r}")
    pairs = list(pairs)
    present = {t for _, t in pairs}
    return (source_order(benchmark, [s for s, _ in pairs], group_by),
            [d for d in domain_order(benchmark, group_by) if d in present])


def cross_matrix(benchmark: str, model: str, metric: str, cells: Mapping[tuple[str, str], float],
                 group_by: str = "level") -> CrossMatrix | None:
    """The matrix of ``cells`` ((source, target) -> value, as given: scaled or not), with
    its difference to in-domain fine-tuning; None when no cell has a catalogue target.

    Rows: the sources present (:func:`source_order`); columns: the benchmark's domains
    present (:func:`domain_order`); a cell not given is nan, and so is every difference
    that needs it.
    """
    sources, targets = axes(benchmark, cells, group_by)
    if not targets or not sources:
        return None
    m = np.array([[cells.get((s, t), math.nan) for t in targets] for s in sources], dtype=float)
    m = m.reshape(len(sources), len(targets))
    diag = np.array([cells.get((t, t), math.nan) for t in targets], dtype=float)
    diff = m - diag[None, :]
    groups = {x: group_of(benchmark, x) for x in [*sources, *targets]} if group_by == "level" else {}
    return CrossMatrix(benchmark, model, metric, sources, targets, m, diff, groups)


def matrices(frame: pd.DataFrame, metric: str, group_by: str = "level",
             subsets: Sequence[str] | None = None) -> list[CrossMatrix]:
    """Every (benchmark, model) matrix of ``metric`` (x100 for fractions) in a frame of
    :func:`load_cross`.

    Rows: the sources with at least one result; columns: the targets evaluated by at
    least one source; ``subsets`` keeps only those domains (base rows stay).
    """
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}; got {group_by!r}")
    out: list[CrossMatrix] = []
    if frame.empty:
        return out
    f = frame[frame["metric"] == metric]
    if subsets is not None:
        f = f[f["domain"].isin(subsets) & (f["source"].isin(subsets) | f["source"].isin(BASE_SOURCES))]
    # one filter per cell: the harness's default "none" where a task reports several
    f = f.assign(_pref=(f["filter"] != "none")).sort_values(["_pref", "filter"])
    f = f.drop_duplicates(["benchmark", "model", "source", "domain"], keep="first")
    for (benchmark, model), g in f.groupby(["benchmark", "model"], sort=True):
        cells = {(r.source, r.domain): float(r.value) * scale(metric) for r in g.itertuples()}
        cm = cross_matrix(benchmark, model, metric, cells, group_by)
        if cm is not None:
            out.append(cm)
    return out


# ------------------------------------------------------------------ output


def matrix_markdown(cm: CrossMatrix, values: np.ndarray, digits: int = 2) -> str:
    """Markdown table of ``values`` over ``cm``'s rows and columns; with groups, a level
    column for the rows (the columns' levels are listed above the table)."""
    grouped = bool(cm.groups)
    header = ["fine-tuned on \\ evaluated on", *(["level"] if grouped else []), *cm.targets]
    rows = [[s, *([cm.groups[s]] if grouped else []), *(fmt(v, digits) for v in row)]
            for s, row in zip(cm.sources, values)]
    align = ["---"] + (["---"] if grouped else []) + ["---:"] * len(cm.targets)
    return markdown_table(header, rows, align)


def column_groups_line(cm: CrossMatrix) -> str:
    """``Columns by level: genre: cnndm, pubmed; style: cnn.`` (empty without groups)."""
    if not cm.groups:
        return ""
    runs: dict[str, list[str]] = {}
    for t in cm.targets:
        runs.setdefault(cm.groups[t], []).append(t)
    return "Columns by level: " + "; ".join(f"{g}: {', '.join(ts)}" for g, ts in runs.items()) + ".\n\n"


def tidy_rows(cm: CrossMatrix) -> list[dict]:
    """One dict per existing cell (finite or reported n/a) for ``cross_domain.csv``."""
    rows = []
    for i, s in enumerate(cm.sources):
        for j, t in enumerate(cm.targets):
            rows.append({"benchmark": cm.benchmark, "model": cm.model, "metric": cm.metric,
                         "source": s, "source_level": group_of(cm.benchmark, s),
                         "target": t, "target_level": group_of(cm.benchmark, t),
                         "value": cm.matrix[i, j], "in_domain": cm.in_domain(t),
                         "diff": cm.diff[i, j]})
    return rows


# ------------------------------------------------------------------ beside the paper

#: the paper's table a cross-domain cell is shown beside
PUBLISHED_TABLE = (DOMAINSUM.name, "Table 6")
#: the paper's settings of a cell's score and of its difference to in-domain fine-tuning
CELL_SETTING, DIFF_SETTING = "cross-domain fine-tuned", "cross-domain minus in-domain fine-tuned"


def published_beside(frame: pd.DataFrame, mats: Sequence[CrossMatrix]) -> list[dict[str, Any]]:
    """DomainSum Table 6's published values of every train -> test pair and metric a
    matrix holds (each of the paper's models: BART and Llama3.1-8B), beside the user's cell
    (the score, and its Δ beside the paper's printed gain over in-domain fine-tuning), each
    cited and checked against the paper's protocol (:func:`lm_eval_tasks.published.beside.beside`):
    the model fine-tuned (the paper's row's checkpoint or not), the documents scored (the
    results file's ``n-samples``) against the paper's 500, the scorers' recorded variants
    and the generation settings."""
    from lm_eval_tasks import published
    from lm_eval_tasks.published import beside, protocol

    name, table = PUBLISHED_TABLE
    paper = published.load(name)
    out: list[dict[str, Any]] = []
    cache: dict[tuple[str, str], tuple[protocol.RunFacts, str]] = {}
    for cm in mats:
        if paper is None or cm.benchmark != paper.benchmark:
            continue
        for metric in protocol.metrics_of(paper, [cm.metric], table):
            for v in paper.find(table=table, metric=metric):
                s, t = v.get("training_subset"), v.get("subset")
                if s not in cm.sources or t not in cm.targets or v["setting"] not in (CELL_SETTING, DIFF_SETTING):
                    continue
                i, j = cm.sources.index(s), cm.targets.index(t)
                if not math.isfinite(cm.matrix[i, j]):
                    continue
                mine = cm.matrix[i, j] if v["setting"] == CELL_SETTING else cm.diff[i, j]
                rows = frame[(frame["benchmark"] == cm.benchmark) & (frame["model"] == cm.model)
                             & (frame["source"] == s) & (frame["domain"] == t) & (frame["metric"] == cm.metric)]
                key = (str(rows["results_file"].iloc[0]), str(rows["task"].iloc[0]))
                if key not in cache:
                    cache[key] = _cell_facts(Path(key[0]), key[1], f"{cm.model} fine-tuned on {s}", t)
                facts, model = cache[key]
                ids = paper.models.get(v["model"], [])
                extra = [protocol.Field("model", model, f"{v['model']} ({', '.join(ids)})" if ids else v["model"],
                                        paper.model_of(model) == v["model"])]
                value = float(mine) / scale(cm.metric) * paper.scale(metric) if math.isfinite(mine) else None
                label = f"{cm.model}: {s} → {t}, {metric}" + (" Δ to in-domain" if v["setting"] == DIFF_SETTING else "")
                out.append(beside.beside(paper, v, value, facts, label, extra))
    return out


def _cell_facts(path: Path, task: str, label: str, target: str) -> tuple[Any, str]:
    """(the :class:`~lm_eval_tasks.published.protocol.RunFacts` of ``task`` in the results file
    ``path``, the model it was fine-tuned from): its documents, scorers and generation as
    recorded there."""
    from lm_eval_tasks.published import protocol
    from lm_eval_tasks.report.systems import system_of
    from lm_eval_tasks.results import documents_of

    data = json.loads(path.read_text(encoding="utf-8"))
    meta = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
    system = system_of(data.get("config") or {}, True, results=data, task=task, results_file=path)
    model = system.started_from or system.base
    return protocol.RunFacts(label=label, setting=CELL_SETTING, model=model, subset=target,
                             documents=documents_of(data, task), scoring=protocol.scoring_of(meta),
                             generation=protocol.generation_of(meta, dict(system.settings))), model


def write_cross_domain(root: Path, out: Path, metrics: Sequence[str], group_by: str = "level",
                       subsets: Sequence[str] | None = None, mask_diagonal: bool = False,
                       plots: bool = True) -> tuple[str, list[Path]]:
    """Every matrix of ``metrics`` under ``root`` into ``out`` (see the module docstring);
    returns the Markdown of ``cross_domain.md`` and the files written."""
    from custom_metrics.analysis import plots as _plots

    frame, problems = load_cross(root)
    out.mkdir(parents=True, exist_ok=True)
    md = ["Cross-domain evaluation: rows = source (the model fine-tuned on it; `base` = "
          "before fine-tuning), columns = target (evaluated on); scores x100 where the "
          "metric is a fraction; Δ = cell − the target's in-domain score (its row "
          "fine-tuned on the target itself).", ""]
    written: list[Path] = []
    tidy: list[dict] = []
    every: list[CrossMatrix] = []
    for metric in metrics:
        label = METRICS.get(metric, metric)
        unit = f"{label} (x100)" if scale(metric) != 1 else label
        mats = matrices(frame, metric, group_by, subsets)
        every += mats
        if not mats:
            problems.append(f"no '{metric}' values found")
        for cm in mats:
            where = f"{cm.benchmark} / {cm.model} / {metric}"
            if missing := cm.missing_cells():
                problems.append(f"{where}: missing cells " + ", ".join(missing))
            if gaps := cm.no_in_domain():
                problems.append(f"{where}: Δ n/a in column(s) {', '.join(gaps)}: no in-domain "
                                "result (no row fine-tuned on that target, or its own cell missing)")
            tidy += tidy_rows(cm)
            part = (f"**{unit}, {cm.benchmark}, {cm.model}**\n\n" + column_groups_line(cm)
                    + matrix_markdown(cm, cm.matrix)
                    + f"\nΔ to in-domain fine-tuning ({label}):\n\n" + matrix_markdown(cm, cm.diff))
            (out / f"{cm.stem}.md").write_text(part, encoding="utf-8")
            md.append(part)
            written.append(out / f"{cm.stem}.md")
            if not plots:
                continue
            axes_note = "rows: fine-tuned on (source), columns: evaluated on (target)"
            for suffix, values, kind, heading in (
                    ("", cm.matrix, "scores", f"cross-domain {unit}"),
                    ("_diff", cm.diff, "Δ", f"{label} Δ to in-domain fine-tuning (x100)"
                     if scale(metric) != 1 else f"{label} Δ to in-domain fine-tuning")):
                try:
                    written.append(_plots.heatmap(
                        out / f"{cm.stem}{suffix}.png",
                        f"{cm.model} ({cm.benchmark}): {heading}\n{axes_note}",
                        cm.targets, values, row_labels=cm.sources,
                        value_label=unit if kind == "scores" else f"Δ {unit}",
                        diverging=kind == "Δ", groups=cm.groups or None,
                        mask_diagonal=mask_diagonal and kind == "scores",
                        outline_diagonal=not (mask_diagonal and kind == "scores")))
                except _plots.NothingToPlot as exc:
                    problems.append(f"{where}: {kind} heat map not drawn: {exc}")
    frame_csv(pd.DataFrame(tidy, columns=["benchmark", "model", "metric", "source", "source_level", "target",
                                          "target_level", "value", "in_domain", "diff"]),
              out / "cross_domain.csv", index=False)
    written.append(out / "cross_domain.csv")
    beside_paper = published_beside(frame, every)
    if beside_paper:
        from lm_eval_tasks.published.beside import beside_markdown

        md += ["Beside the paper's published values (DomainSum Table 6, x100; Δ beside the paper's printed "
               "difference to in-domain fine-tuning):", "", beside_markdown(beside_paper)]
    (out / "cross_domain.json").write_text(json.dumps({"published": beside_paper}, indent=2, ensure_ascii=False)
                                           + "\n", encoding="utf-8")
    written.append(out / "cross_domain.json")
    if problems:
        md += ["Notes:", *(f"- {p}" for p in problems), ""]
    text = "\n".join(md)
    (out / "cross_domain.md").write_text(text, encoding="utf-8")
    written.append(out / "cross_domain.md")
    return text, written


__all__ = ["BASE_SOURCES", "CELL_SETTING", "DIFF_SETTING", "GROUP_BY", "METRICS", "PUBLISHED_TABLE", "CrossMatrix", "axes", "cross_matrix", "domain_order", "group_of",
           "load_cross", "matrices", "published_beside", "source_order", "write_cross_domain"]
