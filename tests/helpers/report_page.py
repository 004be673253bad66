"""Harness output written by hand (results and ``--log_samples`` files, no model) for tests of
the ``domsum report`` page: systems with long names (wide tables), a subset one system
lacks (an n/a bar) and a system scoring 0 on one subset (a bar of height 0)."""

from __future__ import annotations

import json
import random
from pathlib import Path

TS = "2025-03-04T05-06-07.000001"
SUBSETS = ("cnndm", "pubmed", "samsum")
COMMON = "the a of and to in that was with for after people report time week".split()
WORDS = {"cnndm": "police court minister storm election roads officials city".split(),
         "pubmed": "patients trial blood pressure dose cells tumour therapy".split(),
         "samsum": "hey tomorrow dinner call okay movie tonight late".split()}


def _text(rng: random.Random, n: int, subset: str) -> str:
    return " ".join(rng.choice(COMMON + WORDS.get(subset, WORDS["cnndm"])) for _ in range(n))


def _sample(doc_id: int, subset: str, rng: random.Random, level: float) -> dict:
    r1 = 0.0 if level == 0 else min(1.0, max(0.0, level + rng.uniform(-0.15, 0.15)))
    r2, rl = r1 * 0.5, r1 * 0.8
    f1 = 0.0 if level == 0 else 0.80 + level / 5 + rng.uniform(-0.03, 0.03)
    scores = {"rouge1": r1, "rouge2": r2, "rougeL": rl, "rouge_geo": [r1, r2, rl],
              "rouge_mean": (r1 + r2 + rl) / 3, "bertscore_p": f1, "bertscore_r": f1, "bertscore_f1": f1}
    doc = {"id": f"domainsum/{subset}/test/{doc_id}", "document": _text(rng, 60, subset),
           "summary": _text(rng, 12, subset)}
    return {"doc_id": doc_id, "doc": doc, "target": doc["summary"], "resps": [["x"]], "filtered_resps": ["x"],
            "filter": "none", "metrics": list(scores), **scores}


def _folded(rows: list[dict]) -> dict[str, float]:
    """The values the harness reports: means, and ``rouge_geo`` from the three corpus means."""
    n = len(rows)
    out = {k: sum(r[k] for r in rows) / n for k in rows[0]["metrics"] if k != "rouge_geo"}
    out["rouge_geo"] = (out["rouge1"] * out["rouge2"] * out["rougeL"]) ** (1 / 3)
    return out


def write_system(root: Path, model: str, levels: dict[str, float], shots: tuple[int, ...] = (0, 2),
                 n_docs: int = 8, seed: int = 0, metadata: dict | None = None) -> Path:
    """One results file and its samples files: ``levels[subset]`` is the system's typical ROUGE-1
    (0: every document scores 0); subsets not in ``levels`` are not evaluated. ``metadata``:
    every task's metadata (what the scorers recorded they used), none by default."""
    rng = random.Random(f"{model}-{seed}")
    folder = root / model.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    results, configs = {}, {}
    for subset, level in levels.items():
        for k in shots:
            task = f"domainsum_{subset}" + (f"_{k}shot" if k else "")
            rows = [_sample(i, subset, rng, level * (1.1 if k else 1.0)) for i in range(n_docs)]
            (folder / f"samples_{task}_{TS}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            results[task] = {"alias": task, **{f"{m},none": v for m, v in _folded(rows).items()}}
            configs[task] = {"metadata": dict(metadata or {})}
    data = {"results": results, "groups": {}, "configs": configs, "n-shot": {}, "n-samples": {},
            "config": {"model": "hf", "model_args": f"pretrained={model}"}}
    path = folder / f"results_{TS}.json"
    path.write_text(json.dumps(data))
    return path


def write_runs(root: Path) -> Path:
    """Three systems with long names; the third lacks SAMSum and scores 0 on PubMed."""
    write_system(root, "meta-llama/Llama-3.1-8B-Instruct-long-checkpoint-name", dict(zip(SUBSETS, (0.42, 0.35, 0.30))))
    write_system(root, "Qwen/Qwen2.5-7B-Instruct-another-long-checkpoint-name", dict(zip(SUBSETS, (0.38, 0.31, 0.33))))
    write_system(root, "HuggingFaceTB/SmolLM2-135M-Instruct", {"cnndm": 0.12, "pubmed": 0.0})
    return root
