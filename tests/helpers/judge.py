"""Helpers shared by the unit and integration tests of judge (tests/unit, tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path


from helpers.judge_server import JUDGE_ENV  # noqa: E402  (one list of the judge's variables)


def M(marker: str) -> str:
    """The unambiguous form of a marker inside a request (rules match substrings)."""
    return f"<<{marker}>>"


def req(marker: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Rate the summary (1-5)."},
            {"role": "user", "content": f"Summary: item {M(marker)}\n\n- Score (1-5):"}]


def _write_samples(path: Path) -> list[dict]:
    rows = [
        {"doc_id": 0, "doc": {"document": "The kinase inhibitor reduced tumour growth in mice.",
                              "summary": "A kinase inhibitor reduced tumour growth."},
         "target": "A kinase inhibitor reduced tumour growth.",
         "resps": [["  The inhibitor reduced tumour growth in mice. "]],
         "filtered_resps": ["  The inhibitor reduced tumour growth in mice. "], "filter": "none"},
        {"doc_id": 1, "doc": {"document": "Patients received the vaccine in two doses.",
                              "summary": "Two vaccine doses were given."},
         "target": "Two vaccine doses were given.",
         "resps": [["Patients got two doses of vaccine."]],
         "filtered_resps": ["Patients got two doses of vaccine."], "filter": "none"},
        {"doc_id": 2, "doc": {"document": "Blood pressure fell after treatment.",
                              "summary": "Treatment lowered blood pressure."},
         "target": "Treatment lowered blood pressure.",
         "resps": [["unparseable-case blood pressure fell"]],
         "filtered_resps": ["unparseable-case blood pressure fell"], "filter": "none"},
    ]
    for r in rows:  # the rest of what lm-eval 0.4.13 writes per line
        r["doc"]["id"] = f"adapteval/pubmed/test/{r['doc_id']}"
        r["arguments"] = {"gen_args_0": {"arg_0": "PROMPT", "arg_1": {"until": ["\n\n\n\n"]}}}
        r["metrics"] = ["rouge1"]
        r["doc_hash"] = r["prompt_hash"] = r["target_hash"] = "0" * 64
        r["rouge1"] = [r["doc"]["id"], r["filtered_resps"][0], r["target"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows
