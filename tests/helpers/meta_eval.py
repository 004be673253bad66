"""Helpers shared by the unit and integration tests of meta_eval (tests/unit, tests/integration)."""

from __future__ import annotations

import json
import math

import pytest


# Five papers, three systems. Human totals make the system ranking known:
# good > mid > bad; "mid" is missing from paper 4 (a system present in some rows only);
# paper 2's "bad" summary is empty and its human total NaN; paper 3's "good" bert is NaN.
HUMAN = {
    "good": [0.90, 0.80, 0.85, 0.95, 0.70],
    "mid": [0.60, 0.55, 0.50, None, 0.65],
    "bad": [0.20, float("nan"), 0.30, 0.10, 0.25],
}
BERT = {
    "good": [0.88, 0.84, float("nan"), 0.91, 0.80],
    "mid": [0.70, 0.72, 0.66, None, 0.75],
    "bad": [0.60, 0.50, 0.62, 0.55, 0.58],
}
ROUGEL = {  # deliberately mis-ranks mid above good
    "good": [0.30, 0.28, 0.31, 0.33, 0.25],
    "mid": [0.35, 0.36, 0.34, None, 0.37],
    "bad": [0.10, 0.12, 0.11, 0.09, 0.13],
}
LISTS = {"good": [1.0, 0.75, 0.75, 1.0], "mid": [2 / 3, 0.5, 0.5, 2 / 3], "bad": [1 / 3, 0.25, 0.25, 0]}


def _fd_records():
    recs = []
    for d in range(5):
        r = {"article": f"article {d}", "human": f"reference abstract {d} about cells and mice",
             "ground_aspect": json.dumps({"background": "b", "method": "m", "result": "r", "conclusion": ""})}
        for s in ("good", "mid", "bad"):
            if s == "mid" and d == 3:
                continue
            r[s] = "" if (s == "bad" and d == 1) else f"{s} summary {d} about cells"
            r[f"{s}_human"] = None if math.isnan(HUMAN[s][d]) else HUMAN[s][d]
            r[f"{s}_human_list"] = LISTS[s]
            r[f"{s}_aspect"] = json.dumps({"background": "x"})
            r[f"{s}_bert"] = None if math.isnan(BERT[s][d]) else BERT[s][d]
            r[f"{s}_newrougel"] = ROUGEL[s][d]
        recs.append(r)
    return recs


@pytest.fixture
def fd_file(tmp_path):
    p = tmp_path / "fd.json"
    p.write_text("\n".join(json.dumps(r) for r in _fd_records()) + "\n")
    return p
