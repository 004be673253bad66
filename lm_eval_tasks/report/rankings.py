"""``domsum rankings``: an expert ranking study's page (HTML, Markdown, JSON, CSV), with
AdaptEval's manual evaluation (Section 3.3) beside the user's numbers.

Why here and not in :mod:`custom_metrics.analysis.rankings`: the library computes the
shares, kappa and W from records; reading the file (the suite's record readers, which
name file and line), the paper's published numbers and their protocol check
(:mod:`lm_eval_tasks.published`, :mod:`lm_eval_tasks.published.beside`) and the page
belong to the suite.

Beside the paper: its Cohen's kappa (0.4) beside the user's (the mean over annotator
pairs: with two annotators, their kappa), and each of its four top-two shares beside the
share of the user's system named after the paper's row and setting, compared ignoring
case, spaces and punctuation (``Llama2 7b 2-shot``, ``Llama2 70b 2-shot``, ``Llama2 7b
fine-tuned``, ``PEGASUS-X fine-tuned``), both as the pooled share and as the share of
documents every annotator put in the top k (the paper does not say which it reports). A
published share with no such system stands beside "n/a". Every row carries the protocol
check in words: documents (the paper's 25), annotators (2), systems (4), the top k (2) and
what the paper leaves unstated (the share's definition, ties, the pair labels).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from custom_metrics.analysis.rankings import LABELS, analyse, read_rankings
from custom_metrics.cells import markdown_table, write_csv
from custom_metrics.outputs import write_atomically
from lm_eval_tasks.benchmarks.adapteval.record import RECORD as ADAPTEVAL
from lm_eval_tasks.data.user_files import table_lines
from lm_eval_tasks.report.tables import Table

#: the paper, and where in it the study is
PAPER, SECTION = ADAPTEVAL.name, "Section 3.3"
#: the paper's k ("among the top two positions")
PAPER_K = 2
#: the two readings of a share, as the run states its measure
MEASURES = {"share": "share of all annotators' rankings placing the system in the top k",
            "all_annotators_share": "share of documents on which every annotator placed the system in the top k"}


def _norm(text: Any) -> str:
    return re.sub(r"[^0-9a-z]", "", str(text).casefold())


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def _f(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.3f}"


def _ci(ci: list, fmt=_f) -> str:
    return "" if ci[0] is None else f" [{fmt(ci[0])}, {fmt(ci[1])}]"


def published_beside(result: dict[str, Any], counts: dict[str, int], label: str) -> list[dict[str, Any]]:
    """The paper's kappa and top-two shares beside the run's (module docstring), one
    :func:`lm_eval_tasks.published.beside.beside` record each."""
    from lm_eval_tasks import published
    from lm_eval_tasks.published import beside, protocol

    paper = published.load(PAPER)
    if paper is None:
        return []
    ties = (f"allowed: {counts['rankings_with_ties']} of {counts['rankings']} rankings hold a tie"
            if counts["rankings_with_ties"] else "none in the file")
    common = {"annotators": counts["annotators"], "systems": counts["systems"], "ties": ties}
    k = result["top_k"]
    extra = [protocol.Field("top k", k, PAPER_K, k == PAPER_K)]
    shares = {_norm(s["system"]): s for s in result["shares"]}
    out = []
    for v in paper.find(table=SECTION):
        if v["metric"] == "Cohen's kappa":
            n_pairs = len(result["agreement"]["pairs"])
            facts = protocol.RunFacts(label=label, setting="manual ranking", documents=counts["documents"],
                                      stated={**common, "labels": "; ".join(LABELS) + " (ties a category)"})
            what = "Cohen's kappa" + (f" (mean over {n_pairs} annotator pairs)" if n_pairs > 1 else "")
            out.append(beside.beside(paper, v, result["agreement"]["kappa_mean"], facts, what))
            continue
        name = f"{v['row']} {v['setting']}"
        mine = shares.get(_norm(name))
        for key, measure in MEASURES.items():
            facts = protocol.RunFacts(label=label, setting=v["setting"], documents=counts["documents"],
                                      stated={**common, "measure": measure})
            value = mine[key] * paper.scale(v["metric"]) if mine and mine[key] is not None else None
            said = "pooled rankings" if key == "share" else "every annotator"
            what = (f"{mine['system']}: top-{k} share, {said}" if mine else
                    f"{name}: top-{k} share, {said} (no system of this name in the file)")
            out.append(beside.beside(paper, v, value, facts, what, extra))
    return out


def tables(result: dict[str, Any], counts: dict[str, int]) -> list[Table]:
    """The page's tables: shares, pairwise kappa, Kendall's W (per document and overall)."""
    iv = result["interval"]
    k, level = result["top_k"], f" [{100 * iv['level']:.0f}% CI]" if iv["resamples"] else ""  # --bootstrap 0: none
    shares = Table("shares", f"Top-{k} shares", ["System", "Rankings", f"In top {k}", f"Share{level}",
                                                  f"Documents, every annotator top {k}", f"Share{level}"],
                   [[s["system"], str(s["rankings"]), str(s["in_top_k"]), _pct(s["share"]) + _ci(s["ci"], _pct),
                     f"{s['documents_all_annotators_top_k']} of {s['documents']}",
                     _pct(s["all_annotators_share"]) + _ci(s["all_annotators_ci"], _pct)] for s in result["shares"]],
                   caption=f"A system is in the top {k} of a ranking when fewer than {k} systems are ranked strictly "
                           "better. Pooled: over every annotator's ranking of every document; every annotator: the "
                           "documents on which each annotator who ranked it placed it there.")
    agreement = result["agreement"]
    kappa = Table("kappa", "Pairwise preference agreement (Cohen's kappa)",
                  ["Annotators", "Items", "Observed agreement", "Chance agreement", f"Kappa{level}"],
                  [[" vs ".join(p["annotators"]), str(p["items"]), _f(p["observed_agreement"]),
                    _f(p["chance_agreement"]), _f(p["kappa"]) + _ci(p["ci"])] for p in agreement["pairs"]],
                  caption="Items: every document and pair (A, B) of its systems that both annotators ranked; labels: "
                          + ", ".join(LABELS) + " (ties a category of their own).",
                  notes=([f"Mean over the {len(agreement['pairs'])} annotator pairs (Light's kappa): "
                          f"{_f(agreement['kappa_mean'])}{_ci(agreement['kappa_mean_ci'])}."]
                         if len(agreement["pairs"]) > 1 else []) + ([f"Not computed: {agreement['why']}."]
                                                                     if "why" in agreement else []))
    w = result["kendall_w"]
    overall = w["all_rankings"]
    kendall = Table("kendall_w", "Kendall's W (tie-corrected)", ["Document", "Rankings", "W"],
                    [[d["document"], str(d["rankings"]), _f(d["w"])] for d in w["per_document"]],
                    caption=f"Per document, among its annotators. Mean over {w['documents']} documents: "
                            f"{_f(w['mean'])}{_ci(w['mean_ci'])}" + (f" ({w['undefined']} without a W: one annotator, "
                                                                    "or every system tied)" if w["undefined"] else "")
                            + f". All {overall['rankings']} rankings as raters of the systems: "
                            + (f"{_f(overall['w'])}{_ci(overall['ci'])}." if overall["w"] is not None
                               else f"not computed ({overall.get('why', 'undefined')})."))
    return [shares, kappa, kendall]


def _facts(result: dict[str, Any], counts: dict[str, int], source: str) -> list[str]:
    iv = result["interval"]
    return [f"{source}: {counts['rankings']} rankings by {counts['annotators']} annotator(s) of "
            f"{counts['documents']} document(s), {counts['systems']} systems; {counts['rankings_with_ties']} "
            f"ranking(s) hold a tie, {counts['documents_with_one_annotator']} document(s) have one annotator.",
            f"Intervals: {100 * iv['level']:.0f}% {iv['method']}, {iv['resamples']} resamples, seed {iv['seed']}."
            if iv["resamples"] else "Intervals: none (--bootstrap 0)."]


def markdown(result: dict[str, Any], counts: dict[str, int], source: str, shown: list[Table]) -> str:
    from lm_eval_tasks.published.beside import beside_markdown

    md = [f"# Expert rankings: {source}", "", *[f"- {f}" for f in _facts(result, counts, source)], ""]
    for t in shown:
        md += [f"## {t.title}", "", t.caption, "", markdown_table(t.header, t.rows, ["---"] * len(t.header)).rstrip()]
        md += [f"- {n}" for n in t.notes] + [""]
    if result["published"]:
        md += [f"## Beside AdaptEval {SECTION} (published)", "",
               "The paper's numbers marked (published), cited, with how its study differs from this file's "
               "('published' in rankings.json).", "", beside_markdown(result["published"]).rstrip(), ""]
    return "\n".join(md)


def page(result: dict[str, Any], counts: dict[str, int], source: str, shown: list[Table]) -> str:
    import html

    from lm_eval_tasks.published.beside import BESIDE_HEADER
    from lm_eval_tasks.report.page import document, table_html, written_at
    from lm_eval_tasks.published.protocol import DIFFERENT, SAME

    rows = [[r["label"], _f(r["run_value"]) if r["metric"] != "Top-2 share" else
             ("n/a" if r["run_value"] is None else f"{r['run_value']:.1f}"),
             f"{r['published']:g} (published)", r["cite"],
             f"{SAME if r['comparable'] else DIFFERENT} {r['sentence']}"] for r in result["published"]]
    beside = [Table("published", f"Beside AdaptEval {SECTION} (published)", list(BESIDE_HEADER), rows,
                    caption="Shares in %, as the paper prints them.")] if rows else []
    facts = "".join(f"<li>{html.escape(f)}</li>" for f in _facts(result, counts, source))
    return document(f"Expert rankings: {source}", f"<h1>Expert rankings: {html.escape(source)}</h1>"
                    f'<p class="meta">Written {written_at()} by <code>domsum rankings</code>.</p><ul>{facts}</ul>'
                    + "".join(table_html(t) for t in shown + beside))


def write_rankings(path: str | Path, out: Path, top_k: int = PAPER_K, n_boot: int = 1000,
                   seed: int = 1234) -> dict[str, Any]:
    """Read ``path`` (CSV or JSON lines), analyse it and write ``rankings.json``,
    ``rankings.md``, ``rankings.html`` and ``shares.csv`` into ``out``; returns the JSON's
    content with the Markdown under ``markdown``."""
    path = Path(path)
    rankings, counts = read_rankings(table_lines(path), str(path))
    result = analyse(rankings, top_k, n_boot, seed)
    result["published"] = published_beside(result, counts, path.name)
    result = {"input": str(path), "counts": counts, **result}
    shown = tables(result, counts)
    write_atomically(out / "rankings.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    text = markdown(result, counts, path.name, shown)
    write_atomically(out / "rankings.md", text)
    write_atomically(out / "rankings.html", page(result, counts, path.name, shown))
    write_csv(out / "shares.csv", ["system", "rankings", "in_top_k", "share", "ci_low", "ci_high", "documents",
                                   "documents_all_annotators_top_k", "all_annotators_share"],
              [[s["system"], s["rankings"], s["in_top_k"], s["share"], *s["ci"], s["documents"],
                s["documents_all_annotators_top_k"], s["all_annotators_share"]] for s in result["shares"]])
    return {**result, "markdown": text}


__all__ = ["MEASURES", "PAPER", "PAPER_K", "SECTION", "markdown", "page", "published_beside", "tables",
           "write_rankings"]
