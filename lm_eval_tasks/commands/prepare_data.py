"""``domsum prepare-data``: build the local data mirror ``DIR/<benchmark>/<subset>/<split>.jsonl``.

Two sources:

* ``--release DIR``: the DomainSum authors' released sampled splits (JSON lists of
  ``{"document", "summary"}``), file names like ``cnndm_test_sampled_500.json``,
  ``fox_train_sampled_10000.json``, ``cnndm_train_sampled_20.json`` (the 20-instance
  demonstration pool, written as split ``train_pool20``). Style files use
  ``washington`` for WaPo; topic files are ``topic1`` .. ``topic5``, mapped in order
  to soccer, crime, family, media, law (``--topic-order`` changes the mapping).
* ``--hub``: download from the Hugging Face hub with the paper's seeded sampling
  (DomainSum genre level: 500 test / 500 validation / 10,000 train per domain;
  AdaptEval: the full splits). DomainSum's style level (Newsroom publications) and
  topic level (CNN topic clusters) exist only in the authors' release or Newsroom's
  manual download, so ``--hub`` refuses them.

Examples::

    domsum prepare-data --release ~/DomainSum/data --out ~/domsum_data
    domsum prepare-data --hub --benchmark domainsum --level genre --out ~/domsum_data
    domsum prepare-data --hub --benchmark adapteval --subsets arxiv,pubmed --out ~/domsum_data

Domains and levels come from the task catalogue (:mod:`lm_eval_tasks.catalog`); the
conversion and download are :mod:`lm_eval_tasks.preparation.mirror`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.progress import is_enabled
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.suite import DOMAIN_STUDY
from lm_eval_tasks.data.loader import DataError
from lm_eval_tasks.preparation.mirror import prepare_mirror


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum prepare-data", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--release", type=Path, help=f"folder of the {DOMAIN_STUDY.title} release JSON files")
    src.add_argument("--hub", action="store_true", help="download from the Hugging Face hub")
    ap.add_argument("--out", type=Path, required=True, help="mirror root (use as data_dir)")
    ap.add_argument("--benchmark", default=DOMAIN_STUDY.name, choices=catalog.BENCHMARKS)
    ap.add_argument("--level", choices=sorted(DOMAIN_STUDY.levels),
                    help=f"{DOMAIN_STUDY.title} level (hub: genre only)")
    ap.add_argument("--subsets", "--subset", dest="subsets", help="comma-separated subsets, e.g. arxiv,pubmed")
    ap.add_argument("--splits", default="train,validation,test")
    ap.add_argument("--topic-order", default=",".join(catalog.record(DOMAIN_STUDY.name).release.topic_order),
                    help="names for topic1..topic5 of the release")
    ap.add_argument("--no-progress", action="store_true", help="no download bars (stderr) with --hub")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace splits of an existing mirror that differ (default: stop and name them)")
    args = ap.parse_args(argv)
    try:
        lines = prepare_mirror(
            args.out, args.benchmark, release=args.release, topic_order=tuple(args.topic_order.split(",")),
            level=args.level,
            subsets=args.subsets.split(",") if args.subsets else None, splits=args.splits.split(","),
            overwrite=args.overwrite, progress=is_enabled(False if args.no_progress else None))
    except (DataError, catalog.UnknownTask) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print(f"mirror ready: --metadata '{{\"data_dir\": \"{args.out.resolve()}\"}}' or DOMSUM_DATA_DIR={args.out.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
