"""A paper's published number beside a user's, outside the report's paper layouts.

Why: ``domsum domain-stats`` (DomainSum Table 5), ``domsum cross-domain`` (Table 6),
``domsum token-shift`` (AdaptEval Table 4) and ``domsum meta-eval`` (medqsum's and the
Facet-aware Metric paper's tables) each show a published number next to the user's, and
each must say, beside it, whether the two were produced the same way — with the same
check, the same words and the same record as the report's ``paper_rows.json``
(:mod:`lm_eval_tasks.published.protocol`), not a check of its own.

:func:`beside` is one such pair as a command's JSON holds it (under ``published``):
the published value, its citation, the user's value on the paper's scale, and
``comparable``, ``differences`` [{field, run, paper}] and the sentence in words;
:func:`beside_markdown` shows a list of them as a Markdown table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from lm_eval_tasks.published.protocol import COLUMN, DIFFERENT, SAME, Check, Field, RunFacts, check
from lm_eval_tasks.published import Published


def beside(paper: Published, value: Mapping[str, Any], run_value: float | None, facts: RunFacts,
           label: str, extra: Sequence[Field] = ()) -> dict[str, Any]:
    """One published ``value`` (an object of ``paper``'s values) beside the user's
    ``run_value`` (on the paper's scale), as a command's JSON holds it under ``published``:
    what it is (``label``: the user's cell, ``domain cnndm, Coverage``), the published
    number and its citation, the run's label and the check of ``facts`` (and the
    command's ``extra`` fields) against the protocol of the value's table and block.

    Why one record for every command: domain statistics, cross-domain matrices, token
    shift and meta-evaluation put a paper's number beside a user's the way the report's
    paper layouts do, and a reader (or a script) must find the same verdict in each."""
    protocol = paper.protocol(value["table"], value.get("block"))
    result = (Check((), missing=f"{paper.paper} {value['table']} has no protocol in its data file")
              if protocol is None else check(facts, protocol, [value["metric"]], paper, extra=extra))
    return {"label": label, "paper": paper.paper, "benchmark": paper.benchmark, "table": value["table"],
            "row": value["row"], "column": value["column"], "metric": value["metric"], "setting": value["setting"],
            "published": value["value"], "cite": paper.cite(value), "run": facts.label, "run_value": run_value,
            **result.record()}


#: the columns of :func:`beside_markdown`
BESIDE_HEADER = ("", "This run", "Published", "Where published", COLUMN)


def beside_markdown(records: Sequence[Mapping[str, Any]], digits: int = 2) -> str:
    """The records of :func:`beside` as a Markdown table: the user's cell and number, the
    published number marked as such, its citation and the protocol check in words (a mark
    and ``same protocol`` or ``not comparable: ...``)."""
    from custom_metrics.cells import markdown_table

    def num(x: Any) -> str:
        return "n/a" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{digits}f}"

    rows = [[r["label"], num(r["run_value"]), f"{num(r['published'])} (published)", r["cite"],
             f"{SAME if r['comparable'] else DIFFERENT} {r['sentence']}"] for r in records]
    return markdown_table(list(BESIDE_HEADER), rows, ["---", "---:", "---:", "---", "---"])


__all__ = ["BESIDE_HEADER", "beside", "beside_markdown"]
