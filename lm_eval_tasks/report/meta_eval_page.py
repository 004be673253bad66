"""The meta-evaluation page: ``meta_eval.html``, self-contained in the style of
``domsum report`` (:mod:`.page`'s shell, tables and figures).

It reads only the plain data of :mod:`custom_metrics.analysis.meta_eval.page_data`: one
table per level (coefficient, 95% CI, n, naming the level and the coefficient), the
metric-vs-metric significance matrix, agreement tables, the heat map labelled with its
coefficient and level, and a metric-vs-human scatter per level. Every figure has alt
text saying what it plots. Where the paper's published correlations of the same metric,
aspect and annotator exist (medqsum Tables 3 and 5), a table puts them beside the run's,
marked (published), cited and with the protocol check in words
(:mod:`lm_eval_tasks.report.meta_eval_beside`).
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from custom_metrics.analysis import plots
from custom_metrics.analysis.meta_eval.page_data import level_label, page_data
from lm_eval_tasks.report.figures import Figures
from lm_eval_tasks.report.page import document, figure_html, table_html, toc_html, written_at
from lm_eval_tasks.report.tables import Table

COEFFICIENTS = {"pearson": "Pearson r", "spearman": "Spearman rho", "kendall": "Kendall tau",
                "kendall_b": "Kendall tau-b", "kendall_c": "Kendall tau-c"}


def _f(v: Any, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{digits}f}"


def coefficient_name(c: str) -> str:
    return COEFFICIENTS.get(c, c)


def level_tables(data: dict[str, Any]) -> list[Table]:
    tables = []
    for lv in data["levels"]:
        rows = [[r["metric"], r["human"], coefficient_name(r["coefficient"]), lv["label"], _f(r["r"]),
                 f"[{_f(r['ci_low'])}, {_f(r['ci_high'])}]", str(r["n"])] for r in lv["rows"]]
        unit = {"global": "pairs", "summary": "documents", "system": "systems"}.get(lv["label"], "items")
        tables.append(Table(f"level-{lv['label']}", f"Metric vs human, {lv['label']} level",
                            ["metric", "human score", "coefficient", "level", "value", "95% CI", "n"], rows,
                            caption=f"Computed {lv['description']}; n counts the {unit} it used.",
                            notes=["n/a: fewer than 3 usable pairs, constant scores, or too few defined resamples."]
                            if any(not math.isfinite(r["r"]) or not math.isfinite(r["ci_low"])
                                   for r in lv["rows"]) else []))
    return tables


def significance_table(data: dict[str, Any]) -> Table | None:
    sig = data["significance"]
    if not sig:
        return None
    rows = [[a] + [("—" if a == b else _f(p) + ("*" if math.isfinite(p) and p < 0.05 else ""))
                   for b, p in zip(sig["metrics"], row)] for a, row in zip(sig["metrics"], sig["p"])]
    return Table("significance", "Metric vs metric: is one correlation with the human score higher?",
                 ["p (row vs column)", *sig["metrics"]], rows,
                 caption=f"{sig['test']} on the {coefficient_name(sig['coefficient'])} of each metric with the "
                         f"human score at the {level_label(sig['level'])} level; * p < 0.05.")


def agreement_tables(data: dict[str, Any]) -> list[Table]:
    out = []
    if data["agreement"]["alpha"]:
        out.append(Table("alpha", "Inter-annotator agreement: Krippendorff's alpha",
                         ["aspect", "annotators", "items", "alpha (interval)", "alpha (ordinal)"],
                         [[str(r["aspect"]), str(r["annotators"]), str(r["n_items"]), _f(r["alpha_interval"]),
                           _f(r["alpha_ordinal"])] for r in data["agreement"]["alpha"]],
                         caption="All annotators; items at least two of them rated."))
    if data["agreement"]["kappa"]:
        out.append(Table("kappa", "Inter-annotator agreement: Cohen's kappa per pair",
                         ["aspect", "annotators", "items", "kappa", "quadratic kappa"],
                         [[str(r["aspect"]), f"{r['annotator_a']} vs {r['annotator_b']}", str(r["n_items"]),
                           _f(r["kappa"]), _f(r["kappa_quadratic"])] for r in data["agreement"]["kappa"]]))
    sr = data["system_ratings"]
    if sr is not None and len(sr):
        out.append(Table("system-ratings", "Mean consensus rating per system",
                         ["system", *map(str, sr.columns)],
                         [[str(i), *(_f(v, 3) if not str(c).endswith("_n") else str(int(v)) if v == v else "n/a"
                                     for c, v in row.items())] for i, row in sr.iterrows()]))
    return out


def draw_figures(data: dict[str, Any], folder: Path) -> Figures:
    figs = Figures(folder)
    hm = data["heatmap"]
    if hm:
        coef, level = coefficient_name(hm["coefficient"]), level_label(hm["level"])
        figs.draw("heatmap", f"{coef} between metrics, {level} level",
                  f"{coef} of every two columns over the {level} level's pairs; blue positive, red negative.",
                  lambda p: plots.heatmap(p, f"{coef} between metrics ({level} level)", hm["labels"],
                                          hm["matrix"], value_label=coef, diverging=True, vmin=-1, vmax=1,
                                          digits=2, zero_means="no correlation"),
                  alt=f"Heat map of the {coef} between every two of {', '.join(hm['labels'])} at the {level} "
                      f"level; each cell shows its value.")
    for sc in data["scatter"]:
        names = [p[0] for p in sc["panels"]]
        figs.draw(f"scatter_{sc['label']}", f"Metric vs human, {sc['label']} level",
                  f"x: {sc['x_label']}; y: human score.",
                  lambda p, sc=sc: plots.scatter_plot(p, f"Metric vs human ({sc['label']} level)", sc["panels"],
                                                      sc["x_label"], sc["y_label"]),
                  alt=f"Scatter plots, one per metric ({', '.join(names)}), of the metric against the human "
                      f"score at the {sc['label']} level: {sc['x_label']}.")
    return figs


def published_table(records: list[dict[str, Any]], said: list[str]) -> Table | None:
    """The run's correlations beside the published ones (x100), each cited and checked."""
    from lm_eval_tasks.published.beside import BESIDE_HEADER
    from lm_eval_tasks.report.meta_eval_beside import COEFFICIENT, LEVEL
    from lm_eval_tasks.published.protocol import DIFFERENT, SAME

    if not records and not said:
        return None
    rows = [[r["label"], _f(r["run_value"], 2), f"{_f(r['published'], 2)} (published)", r["cite"],
             f"{SAME if r['comparable'] else DIFFERENT} {r['sentence']}"] for r in records]
    return Table("published", "Beside the published correlations", list(BESIDE_HEADER), rows,
                 caption=f"This run's {coefficient_name(COEFFICIENT)} at the {LEVEL} level, x100, beside the "
                         "paper's value of the same metric, aspect and annotator ('published' in summary.json).",
                 notes=list(said))


def render(data: dict[str, Any], figs: Figures) -> str:
    tables = level_tables(data)
    sig = significance_table(data)
    agreement = agreement_tables(data)
    beside = published_table(data.get("published") or [], data.get("published_notes") or [])
    tables += [beside] if beside else []
    toc = [(t.name, t.title) for t in tables]
    toc += [("significance", "Metric vs metric")] + [(t.name, t.title) for t in agreement] + [("figures", "Figures")]
    facts = "".join(f"<li>{html.escape(f)}</li>" for f in data["facts"])
    sig_html = table_html(sig) if sig else (
        '<h3 id="significance">Metric vs metric</h3><p>No metric-vs-metric test was run.</p>')
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in figs.skipped)
    return document(f"{data['title']}: {data['input']}", f"""<h1>{html.escape(data['title'])}</h1>
<p class="meta">Written {written_at()} by <code>domsum meta-eval</code>.</p>
<ul>{facts}</ul>
{toc_html(toc)}
<h2>Correlation with human scores, per level</h2>
{"".join(table_html(t) for t in tables) or "<p>No correlation to show.</p>"}
<h2>Metric against metric</h2>
{sig_html}
{"<h2>Annotators</h2>" + "".join(table_html(t) for t in agreement) if agreement else ""}
<h2 id="figures">Figures</h2>
{"".join(figure_html(f) for f in figs.drawn) or "<p>No figure had anything to show.</p>"}
{'<h2>Notes</h2><ul class="notes">' + notes + "</ul>" if notes else ""}""")


def write_page(out: str | Path, summary: dict[str, Any], benchmark: str | None = None) -> Path:
    """``meta_eval.html`` (and its PNGs under ``figures/``) in ``out`` from ``run``'s summary,
    after adding the published correlations beside the run's to the folder
    (:func:`~lm_eval_tasks.report.meta_eval_beside.add_published`; ``benchmark``: the
    command's ``--benchmark``)."""
    from lm_eval_tasks.report.meta_eval_beside import add_published

    out = Path(out)
    add_published(out, summary, benchmark)
    data = {**page_data(summary), "published": summary["published"], "published_notes": summary["published_notes"]}
    figs = draw_figures(data, out / "figures")
    path = out / "meta_eval.html"
    path.write_text(render(data, figs), encoding="utf-8")
    return path


__all__ = ["agreement_tables", "draw_figures", "level_tables", "published_table", "render", "significance_table",
           "write_page"]
