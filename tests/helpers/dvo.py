"""Helpers shared by the unit and integration tests of dvo (tests/unit, tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path


def _mirror(root: Path) -> dict[str, list[str]]:
    texts = {
        "pubmed": ["Patients received the treatment; patients improved.",
                   "The trial enrolled 40 patients and 2 clinics."],
        "arxiv": ["We prove the theorem for the lattice model.", "The lattice has 3 phases."],
        "govreport": ["The agency reported costs to Congress.", "Congress reviewed the agency."],
    }
    for subset, docs in texts.items():
        d = root / "adapteval" / subset
        d.mkdir(parents=True)
        with open(d / "train.jsonl", "w", encoding="utf-8") as fh:
            for i, doc in enumerate(docs):
                fh.write(json.dumps({"document": doc, "summary": "s", "id": str(i)}) + "\n")
    return texts
