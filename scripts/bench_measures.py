"""Benchmark the domain-characteristic measures: fast path vs the reference scans.

Synthetic pairs at two lengths: news (~780 document / 56 summary tokens, CNN/DM-like)
and long (~6,000 / 270, arXiv/PubMed-like). Documents draw words from a Zipf law
(exponent 1.07 over 30,000 pseudo-words plus ``,`` and ``.``), summaries copy
document spans (geometric length, mean 4) with 20% novel words, so fragments,
repeats and common-word collisions look like real text.

For each length it times, in pairs per second, on freshly tokenized token lists
(tokenization is timed on its own):

* Newsroom's greedy fragment matcher (quadratic reference vs fast);
* the DomainSum two-pointer scan (reference vs fast);
* all per-pair measures, each profile (reference vs fast);
* tokenization alone, and text -> measures end to end with the fast path.

Each figure is the best of ``--repeat`` runs (default 3): the machine may be shared.

Every fast result is checked to be identical to the reference on the pairs the
reference ran on. Usage::

    python scripts/bench_measures.py                 # default sizes, ~15 s
    python scripts/bench_measures.py --quick         # seconds (smoke test)
    python scripts/bench_measures.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # runnable as a plain script from a checkout
    sys.path.insert(0, str(ROOT))

from custom_metrics.analysis import fragments as F  # noqa: E402
from custom_metrics.analysis import measures as M  # noqa: E402
from custom_metrics.analysis import pair_values as P  # noqa: E402
from custom_metrics.analysis.synthetic import LENGTHS, synthetic_pairs  # noqa: E402
from custom_metrics.tokenize import word_tokenize  # noqa: E402

CNNDM_TRAIN_PAIRS = 287_113


def _rate(fn: Callable[[], object], n: int) -> tuple[float, object]:
    """Pairs per second of one run of ``fn`` (which processes ``n`` pairs)."""
    t0 = time.perf_counter()
    out = fn()
    return n / (time.perf_counter() - t0), out


def bench_length(name: str, n_fast: int, n_ref: int, seed: int = 0, repeat: int = 3) -> list[dict]:
    doc_len, sum_len = LENGTHS[name]
    docs, sums = synthetic_pairs(max(n_fast, n_ref), doc_len, sum_len, seed)

    def fresh(k: int):
        # New token objects each time, so no run profits from string hashes cached by another.
        return [word_tokenize(d) for d in docs[:k]], [word_tokenize(s) for s in sums[:k]]

    rows: list[dict] = []

    def compare(what: str, fast: Callable, ref: Callable) -> None:
        # Best of ``repeat`` runs each (the machine is shared), alternating the two.
        fast_rate = ref_rate = 0.0
        for _ in range(repeat):
            dt, st = fresh(n_fast)
            r, _ = _rate(lambda: [fast(d, s) for d, s in zip(dt, st)], n_fast)
            fast_rate = max(fast_rate, r)
            dt, st = fresh(n_ref)
            r, ref_out = _rate(lambda: [ref(d, s) for d, s in zip(dt, st)], n_ref)
            ref_rate = max(ref_rate, r)
        dt, st = fresh(n_ref)
        if [fast(d, s) for d, s in zip(dt, st)] != ref_out:
            raise AssertionError(f"{what}: fast and reference results differ")
        rows.append({"length": name, "what": what, "fast_pairs_per_s": fast_rate,
                     "reference_pairs_per_s": ref_rate, "speedup": fast_rate / ref_rate,
                     "n_fast": n_fast, "n_reference": n_ref})

    compare("newsroom fragments", F.newsroom_fragments, F.reference_newsroom_fragments)
    compare("domainsum fragments", F.domainsum_fragments, F.reference_domainsum_fragments)
    for profile in M.PROFILES:
        compare(
            f"all measures ({profile})",
            lambda d, s, p=profile: P.fast_pair_values(d, s, p),
            lambda d, s, p=profile: P.reference_pair_values(d, s, p),
        )
    tok_rate = max(_rate(lambda: fresh(n_fast), n_fast)[0] for _ in range(repeat))
    rows.append({"length": name, "what": "tokenization only", "fast_pairs_per_s": tok_rate,
                 "reference_pairs_per_s": None, "speedup": None, "n_fast": n_fast,
                 "n_reference": 0})
    e2e = max(_rate(lambda: M.measure_pairs(docs[:n_fast], sums[:n_fast]), n_fast)[0]
              for _ in range(repeat))
    rows.append({"length": name, "what": "text -> measures (domainsum, fast)",
                 "fast_pairs_per_s": e2e, "reference_pairs_per_s": None, "speedup": None,
                 "n_fast": n_fast, "n_reference": 0})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| length | what | fast pairs/s | reference pairs/s | speed-up |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        ref = f"{r['reference_pairs_per_s']:,.0f}" if r["reference_pairs_per_s"] else "-"
        sp = f"{r['speedup']:.1f}x" if r["speedup"] else "-"
        d, s = LENGTHS[r["length"]]
        lines.append(f"| {r['length']} ({d}/{s}) | {r['what']} | "
                     f"{r['fast_pairs_per_s']:,.0f} | {ref} | {sp} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--news-pairs", type=int, default=400, help="pairs timed, fast path")
    ap.add_argument("--long-pairs", type=int, default=60, help="pairs timed, fast path")
    ap.add_argument("--news-ref-pairs", type=int, default=200, help="pairs timed, reference")
    ap.add_argument("--long-ref-pairs", type=int, default=20, help="pairs timed, reference")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    if args.quick:
        args.news_pairs, args.long_pairs, args.news_ref_pairs, args.long_ref_pairs = 20, 4, 10, 2
        args.repeat = 1
    rows = bench_length("news", args.news_pairs, args.news_ref_pairs, args.seed, args.repeat)
    rows += bench_length("long", args.long_pairs, args.long_ref_pairs, args.seed + 1,
                         args.repeat)
    print(markdown(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
