"""Benchmark: a full meta-evaluation of 3,000 rated summaries (``domsum meta-eval``'s library call).

The meta-evaluation issue asks for 3,000 rated summaries with 10 metrics and 1,000
bootstrap samples in under 30 s on a 2-core machine. The table is synthetic: 30 systems
x 100 documents, a human score that is the mean of three 1-5 ratings (so many exact
ties, as in real consensus scores) and 10 metrics of varying agreement with it.
Timed: :func:`custom_metrics.analysis.meta_eval.run` end to end (reading the CSV, every
metric at the summary, system and global levels with Pearson, Spearman, Kendall tau-b
and tau-c and their bootstrap CIs resampling systems and documents, the paired
permutation test between every two metrics, rankings, the metric matrix and its heat
map, the files); not timed: writing the synthetic CSV.

    OMP_NUM_THREADS=1 python scripts/bench_meta_eval.py [--systems 30] [--documents 100]
        [--metrics 10] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from the checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from custom_metrics.analysis import meta_eval  # noqa: E402


def synthetic_table(systems: int, documents: int, metrics: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    quality = rng.random(systems)
    difficulty = rng.normal(0, 0.5, documents)
    latent = quality[:, None] * 3 + difficulty[None, :] + rng.normal(0, 0.7, (systems, documents))
    ratings = np.clip(np.rint(latent[..., None] + 2 + rng.normal(0, 0.6, (systems, documents, 3))), 1, 5)
    human = ratings.mean(-1)
    cols = {"doc_id": np.tile([f"d{d}" for d in range(documents)], systems),
            "system": np.repeat([f"s{s}" for s in range(systems)], documents), "human": human.ravel()}
    for k in range(metrics):
        noise = 0.3 + 0.3 * k
        cols[f"metric{k}"] = np.round((latent + rng.normal(0, noise, latent.shape)).ravel(), 4)
    return pd.DataFrame(cols)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--systems", type=int, default=30)
    p.add_argument("--documents", type=int, default=100)
    p.add_argument("--metrics", type=int, default=10)
    p.add_argument("--bootstrap", type=int, default=1000)
    p.add_argument("--limit", type=float, default=30.0, help="exit 1 above this many seconds")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "table.csv"
        synthetic_table(args.systems, args.documents, args.metrics).to_csv(path, index=False)
        t0 = time.perf_counter()
        summary = meta_eval.run(path, Path(tmp) / "out", n_boot=args.bootstrap, progress=False)
        elapsed = time.perf_counter() - t0
    rows = args.systems * args.documents
    print(f"meta-eval: {rows} rated summaries ({args.systems} systems x {args.documents} documents), "
          f"{args.metrics} metrics, {args.bootstrap} bootstrap resamples and permutations, "
          f"{len(summary['table'])} correlations with CIs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}: "
          f"{elapsed:.1f} s (limit {args.limit:.0f} s)")
    return 0 if elapsed <= args.limit else 1


if __name__ == "__main__":
    raise SystemExit(main())
