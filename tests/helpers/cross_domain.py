"""Helpers shared by the unit and integration tests of cross_domain (tests/unit, tests/integration)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


TS = "2024-05-01T10-00-00.000001"


def write_run(folder: Path, model: str, tasks: dict[str, dict], ts: str = TS,
              model_args: str = "pretrained=gpt2,peft=/ckpt") -> Path:
    """One harness results file: ``folder/model/results_<ts>.json``."""
    d = folder / model
    d.mkdir(parents=True, exist_ok=True)
    results = {t: {"alias": t, **{f"{k},none": v for k, v in m.items()},
                   **{f"{k}_stderr,none": "N/A" for k in m}} for t, m in tasks.items()}
    data = {"results": results, "groups": {}, "configs": {t: {"metadata": {}} for t in tasks},
            "config": {"model": "hf", "model_args": model_args}, "n-shot": {}, "n-samples": {}}
    path = d / f"results_{ts}.json"
    path.write_text(json.dumps(data))
    return path


# cnndm and pubmed are genre-level domains, cnn a style-level one
CELLS = {  # (source, target): (rouge_geo, bertscore_f1)
    ("cnndm", "cnndm"): (0.40, 0.90), ("cnndm", "pubmed"): (0.20, 0.80), ("cnndm", "cnn"): (0.36, 0.88),
    ("pubmed", "cnndm"): (0.10, 0.85), ("pubmed", "pubmed"): (0.30, 0.88),
    ("cnn", "cnn"): (0.38, 0.89), ("cnn", "cnndm"): (0.33, 0.87),
}


@pytest.fixture()
def cross_root(tmp_path) -> tuple[Path, dict[str, Path]]:
    root = tmp_path / "cross"
    files = {}
    for src in ("cnn", "cnndm", "pubmed"):  # folder order is not the table's order
        files[src] = write_run(root / src, "m1", {
            f"domainsum_{t}": {"rouge_geo": v[0], "bertscore_f1": v[1]}
            for (s, t), v in CELLS.items() if s == src})
    return root, files
