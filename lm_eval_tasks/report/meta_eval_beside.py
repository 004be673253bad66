"""``domsum meta-eval`` beside the papers' published correlations of metrics with human
ratings: medqsum's Tables 3 (revised annotations) and 5 (separated annotations).

Why here and not in :mod:`custom_metrics.analysis.meta_eval`: the published numbers and
the protocol check live in the suite's report (:mod:`lm_eval_tasks.published`,
:mod:`lm_eval_tasks.published.beside`), which the metric library must not import; the
library computes the correlations, this module places the paper's beside them.

A published value stands beside the user's correlation of the same metric (the value's
``scored_metric``, a suite key: the input's column of that name, or ``our_<key>`` that
``--compute`` adds), aspect and annotator (the user's annotator whose name ends in the
paper's number: ``ann1``, ``Annotator 1``, ``1``). The user's number is the Pearson r at
the global level (every (sample, summary) pair pooled, the paper's Section 5.3), x100
as printed. Each record is :func:`lm_eval_tasks.published.beside.beside`'s, and its check
says, in words, what differs: the samples (the input's questions against the paper's
500), the pairs the correlation used (against 500 samples x 5 summaries), the correlation
function (Pearson here; the paper does not name its own), which annotations the ratings
are (the ratings file does not say: separated or revised) and, where the row's metric
has one, its variant (the BERTScore encoder, the perplexity model, ROUGE stemming) as
recorded by ``--compute``, else not known.

Not shown: the consensus (the paper correlates each annotator apart); a release of
another study (``--format summeval``, ``dialsummeval``, ``fd``) or a run naming another
``--benchmark`` (their data are not the paper's questions). The Facet-aware Metric
paper's correlations with the human score are heat maps whose numbers its text does not
give (its data file lists them as unreadable): :func:`notes` says so for an FD input.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from lm_eval_tasks.benchmarks.medqsum.record import RECORD as MEDQSUM

#: the paper and its tables of correlations with human ratings
PUBLISHED_TABLES = (MEDQSUM.name, ("Table 3", "Table 5"))
#: the user's correlation shown beside the paper's: its coefficient and level
COEFFICIENT, LEVEL = "pearson", "global"
#: input formats whose data are another study's, never the paper's questions
OTHER_STUDIES = ("summeval", "dialsummeval", "fd")
#: the paper's correlation protocol field that names a row's metric variant, by suite key prefix
VARIANT_FIELDS = (("bertscore", "bertscore_encoders"), ("perplexity", "perplexity_model"),
                  ("rouge", "rouge_stemming"))
ANNOTATIONS = {"unknown": "the ratings file does not say whether they are separated or revised annotations"}


def _annotator_number(name: Any) -> int | None:
    """The paper's annotator number of a user's annotator: the digits its name ends in."""
    found = re.search(r"(\d+)\s*$", str(name))
    return int(found.group(1)) if found else None


def _variant(key: str, info: dict[str, Any], computed: bool) -> tuple[str, Any] | None:
    """(the paper's field naming the variant of the metric ``key``, what the run used) or None."""
    for prefix, name in VARIANT_FIELDS:
        if not key.startswith(prefix):
            continue
        if not computed:
            return name, {"unknown": "scores read from the input, which does not record how they were computed"}
        used = {"bertscore_encoders": info.get("bertscore_model_used"), "rouge_stemming": info.get("rouge_stemming"),
                "perplexity_model": None}[name]
        if name == "bertscore_encoders" and used is not None:
            from lm_eval_tasks.published.protocol import encoder_name

            layer = info.get("bertscore_layers_used")
            used = encoder_name(used) + (f" layer {layer}" if layer is not None else "")
        return name, used if used is not None else {"unknown": "not recorded by --compute"}
    return None


def published_beside(summary: dict[str, Any], benchmark: str | None = None) -> list[dict[str, Any]]:
    """medqsum Tables 3 and 5 beside the run's correlations (module docstring): one
    :func:`~lm_eval_tasks.published.beside.beside` record per published value that has a
    user's correlation of the same metric, aspect and annotator."""
    from lm_eval_tasks import published
    from lm_eval_tasks.published import beside, protocol

    name, tables = PUBLISHED_TABLES
    corr = summary.get("human_correlations")
    if (corr is None or not len(corr) or benchmark not in (None, name)
            or summary["counts"].get("format") in OTHER_STUDIES):
        return []
    paper = published.load(name)
    if paper is None:
        return []
    corr = corr[(corr["coefficient"] == COEFFICIENT) & (corr["level"] == LEVEL)]
    samples = int(summary["data"]["doc_id"].nunique())
    columns = set(summary["metrics"])
    info = summary.get("compute") or {}
    out = []
    for table in tables:
        for v in paper.find(table=table, metric="correlation"):
            key = v["scored_metric"]
            for column in (key, f"our_{key}"):
                if column not in columns:
                    continue
                rows = corr[(corr["metric"] == column) & (corr["aspect"] == v["aspect"])]
                for _, r in rows.iterrows():
                    if _annotator_number(r["annotator"]) != v["annotator"]:
                        continue
                    stated: dict[str, Any] = {"function": COEFFICIENT, "pairs": int(r["n"]),
                                              "annotations": ANNOTATIONS}
                    variant = _variant(key, info, column != key)
                    if variant is not None:
                        stated[variant[0]] = variant[1]
                    facts = protocol.RunFacts(label=Path(str(summary["input"])).name,
                                              setting="metric vs human correlation", documents=samples,
                                              stated=stated)
                    value = float(r["r"]) * 100 if math.isfinite(float(r["r"])) else None
                    label = f"{column} vs {r['aspect']}, annotator {r['annotator']}"
                    out.append(beside.beside(paper, v, value, facts, label))
    return out


def notes(summary: dict[str, Any]) -> list[str]:
    """Why nothing stands beside an FD input: the Facet-aware Metric paper's correlations
    are unreadable heat maps (as its data file says)."""
    from lm_eval_tasks import published

    if summary["counts"].get("format") != "fd":
        return []
    paper = published.load("facet_aware_metric")
    said = [u for u in (paper.unreadable if paper else []) if "correlation" in u.lower()]
    return [f"No published value beside these correlations: {paper.paper if paper else 'the FM paper'} gives "
            f"them as heat maps only ({u})." for u in said]


def markdown(records: list[dict[str, Any]], said: list[str]) -> str:
    """The Markdown section of ``meta_eval.md``: the records' table, or the notes; empty without either."""
    from lm_eval_tasks.published.beside import beside_markdown

    if not records and not said:
        return ""
    md = ["", "## Beside the published correlations", ""]
    if records:
        md += [f"The run's {COEFFICIENT.capitalize()} r at the {LEVEL} level (x100) beside medqsum Tables 3 "
               "(revised annotations) and 5 (separated annotations), marked (published), cited, with the "
               "protocol check ('published' in summary.json).", "", beside_markdown(records).rstrip()]
    md += [f"- {n}" for n in said]
    return "\n".join(md) + "\n"


def add_published(out: Path, summary: dict[str, Any], benchmark: str | None = None) -> list[dict[str, Any]]:
    """The published values beside the run (:func:`published_beside`), added to the
    folder ``out`` that :func:`custom_metrics.analysis.meta_eval.run` wrote: ``published``
    (and ``published_notes``) in ``summary.json``, a section of ``meta_eval.md`` and of
    ``summary["markdown"]`` (what the command prints), where the folder holds them (a page
    drawn elsewhere changes no file); returns the records."""
    from custom_metrics.outputs import write_atomically

    records, said = published_beside(summary, benchmark), notes(summary)
    if (out / "summary.json").is_file():  # a page drawn into another folder changes no file there
        data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        data.update(published=records, published_notes=said)
        write_atomically(out / "summary.json", json.dumps(data, indent=2, default=str))
    section = markdown(records, said)
    if section and "markdown" in summary and section.strip() not in summary["markdown"]:  # drawn once
        summary["markdown"] = summary["markdown"] + "\n" + section.rstrip("\n")
        if (out / "meta_eval.md").is_file():
            write_atomically(out / "meta_eval.md", summary["markdown"] + "\n")
    summary.update(published=records, published_notes=said)
    return records


__all__ = ["COEFFICIENT", "LEVEL", "PUBLISHED_TABLES", "add_published", "markdown", "notes", "published_beside"]
