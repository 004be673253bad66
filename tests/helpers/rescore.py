"""Helpers shared by the unit and integration tests of rescore (tests/unit, tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path


def _outputs(out: Path, samples: Path) -> tuple[list[dict], dict]:
    scores = [json.loads(x) for x in (out / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    return scores, json.loads((out / f"{samples.stem}.summary.json").read_text())
