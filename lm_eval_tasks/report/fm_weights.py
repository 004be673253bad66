"""``domsum fm-weights``: FM's facet weights fitted to your human scores, beside the paper's.

Why here and not in :mod:`custom_metrics.analysis.fm_weights`: the fit and the reading of
its input are the metric library's; the paper's published weights and MSE, and the check
of how the fit differs from the paper's, are the report's
(:mod:`lm_eval_tasks.published`, :mod:`lm_eval_tasks.published.beside`), which the
library must not import.

:func:`write_fit` reads the rows, fits, and writes into a folder, through the suite's one
writer: ``fm_weights.json`` (the fit, the input counts, ``published``: the paper's
weights and MSE beside yours, each with its protocol check; its top-level ``weights`` and
``intercept`` are what the setting ``fm_weights`` reads when given the file's path),
``fm_weights.md`` and ``fm_weights.html``.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from custom_metrics.analysis.fm_weights import fit_weights, read_rows
from custom_metrics.judge.fm import FACETS
from custom_metrics.outputs import write_atomically

#: the paper whose published fit stands beside the user's, and where it prints it
PAPER, TABLE = "facet_aware_metric", "Section 4.2"
SETTING = "linear fit of overall human scores"


@dataclass
class Written:
    """What the command prints: the Markdown, and the files written."""

    markdown: str
    files: list[Path]


def _form_words(form: dict[str, bool]) -> dict[str, str]:
    """The fit's form as the paper's protocol fields name it (its ``stated`` facts)."""
    return {"intercept": "fitted" if form["intercept"] else "none",
            "sum to one": "constrained" if form["sum_to_one"] else "free",
            "non-negative": "constrained" if form["nonneg"] else "free"}


def published_beside(fit: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """The paper's four weights and its MSE beside the fit's, each a
    :func:`~lm_eval_tasks.published.beside.beside` record: the documents (the fit's n against
    the paper's 500 summaries) and the fit's form (intercept, sum to one, non-negative:
    the paper states none of them) are checked."""
    from lm_eval_tasks import published
    from lm_eval_tasks.published import beside, protocol

    paper = published.load(PAPER)
    if paper is None:
        return []
    facts = protocol.RunFacts(label=label, setting=SETTING, documents=fit["n"], stated=_form_words(fit["form"]))
    out = []
    for v in paper.find(table=TABLE):
        mine = fit["weights"][v["facet"]] if v["metric"] == "facet weight" else fit["mse"]
        what = f"weight of {v['facet']}" if v["metric"] == "facet weight" else "mean squared error"
        out.append(beside.beside(paper, v, mine, facts, what))
    return out


def _f(x: Any, digits: int = 4) -> str:
    return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{digits}f}"


def _intro(summary: dict[str, Any]) -> str:
    """What was fitted, in one paragraph: the form, the rows fitted and the rows skipped."""
    fit, counts = summary["fit"], summary["counts"]
    form = ", ".join(f"{k}: {v}" for k, v in _form_words(fit["form"]).items())
    return (f"Least squares of the overall human score on the four facet scores (rating / scale maximum); "
            f"form: {form}. {fit['n']} rows fitted of {counts['read']} read; skipped: "
            f"{counts['skipped']['missing_facet']} with a facet the reference lacks (FM renormalises those), "
            f"{counts['skipped']['not_scored']} not scored.")


def markdown(summary: dict[str, Any]) -> str:
    """The fit as Markdown: the weights beside the paper's, the fit's figures and the skips."""
    from custom_metrics.cells import markdown_table
    from lm_eval_tasks.published.beside import beside_markdown

    fit = summary["fit"]
    rows = [[f, _f(fit["weights"][f]), _f(fit["paper_weights"][f], 1)] for f in FACETS]
    if fit["intercept"] is not None:
        rows.append(["intercept", _f(fit["intercept"]), "none printed"])
    md = ["# FM facet weights fitted to human scores", "", _intro(summary), "",
          markdown_table(["facet", "fitted weight", "paper's weight (Section 4.2)"], rows).rstrip(), "",
          f"- MSE {_f(fit['mse'], 5)}; R² {_f(fit['r2'])}; n {fit['n']}; rank of the facet matrix {fit['rank']}",
          f"- the paper's weights on the same rows: MSE {_f(fit['mse_paper_weights'], 5)}",
          *(["- the facet columns are linearly dependent (rank below 4): these weights are one of many "
             "equally good fits"] if fit["rank"] < len(FACETS) else []),
          "- " + ("FM can use these weights: setting `fm_weights` = the path of fm_weights.json"
                  if fit["usable_by_fm"] else "FM cannot use these weights: " + _unusable(fit))]
    if summary["published"]:
        md += ["", "## Beside the published fit", "",
               "The paper's weights and MSE (Section 4.2), marked (published), with how this fit differs.", "",
               beside_markdown(summary["published"], digits=3).rstrip()]
    return "\n".join(md) + "\n"


def _unusable(fit: dict[str, Any]) -> str:
    """Why FM cannot use a fit, each reason with the flag that removes it."""
    weights = [fit["weights"][f] for f in FACETS]
    why = (["it has an intercept (fit without --intercept)"] if fit["intercept"] is not None else []) + (
        ["a weight is negative (fit with --nonneg)"] if min(weights) < 0 else []) + (
        ["every weight is 0"] if not any(weights) else [])
    return "; ".join(why)


def page(summary: dict[str, Any]) -> str:
    """The fit as a self-contained HTML page in the report's style."""
    from lm_eval_tasks.report.page import document, table_html, written_at
    from lm_eval_tasks.published.beside import BESIDE_HEADER
    from lm_eval_tasks.published.protocol import DIFFERENT, SAME
    from lm_eval_tasks.report.tables import Table

    fit = summary["fit"]
    rows = [[f, _f(fit["weights"][f]), _f(fit["paper_weights"][f], 1)] for f in FACETS]
    figures = [["MSE", _f(fit["mse"], 5)], ["R²", _f(fit["r2"])], ["n", str(fit["n"])],
               ["MSE of the paper's weights on these rows", _f(fit["mse_paper_weights"], 5)]]
    tables = [Table("weights", "Fitted weights", ["facet", "fitted weight", "paper's weight"], rows),
              Table("fit", "The fit", ["figure", "value"], figures)]
    if summary["published"]:
        tables.append(Table("published", "Beside the published fit", list(BESIDE_HEADER),
                            [[r["label"], _f(r["run_value"], 3), f"{_f(r['published'], 3)} (published)", r["cite"],
                              f"{SAME if r['comparable'] else DIFFERENT} {r['sentence']}"]
                             for r in summary["published"]]))
    intro = html.escape(_intro(summary))
    return document("FM facet weights", f"""<h1>FM facet weights fitted to human scores</h1>
<p class="meta">Written {written_at()} by <code>domsum fm-weights</code>.</p>
<p>{intro}</p>
{"".join(table_html(t) for t in tables)}""")


def write_fit(files: Sequence[str | Path], out: Path, *, facets: Sequence[str] = FACETS, human: str = "human",
              human_file: str | Path | None = None, id_column: str = "id", scale: str = "fraction",
              human_max: float = 1.0, intercept: bool = False, sum_to_one: bool = True,
              nonneg: bool = False) -> Written:
    """Read ``files``, fit (options: :func:`custom_metrics.analysis.fm_weights.read_rows` and
    :func:`~custom_metrics.analysis.fm_weights.fit_weights`) and write the three files into ``out``."""
    from lm_eval_tasks.data.user_files import table_lines

    rows = read_rows([table_lines(f) for f in files], facets, human,
                     table_lines(human_file) if human_file else None, id_column, scale, human_max)
    fit = fit_weights(rows.X, rows.y, intercept=intercept, sum_to_one=sum_to_one, nonneg=nonneg)
    label = ", ".join(Path(f).name for f in files)
    summary = {"weights": fit["weights"], "intercept": fit["intercept"], "fit": fit,
               "input": [str(f) for f in files], "human_file": str(human_file) if human_file else None,
               "counts": {"read": rows.read, "fitted": fit["n"], "skipped": rows.skipped},
               "published": published_beside(fit, label)}
    written = [out / "fm_weights.json", out / "fm_weights.md", out / "fm_weights.html"]
    text = markdown(summary)
    write_atomically(written[0], json.dumps(summary, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    write_atomically(written[1], text)
    write_atomically(written[2], page(summary))
    return Written(text, written)


__all__ = ["PAPER", "SETTING", "TABLE", "Written", "markdown", "page", "published_beside", "write_fit"]
