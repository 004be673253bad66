"""``domsum build-vocab`` run as a command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys


from custom_metrics.families.dvo import load_vocabulary
from helpers.dvo import _mirror


def test_build_vocab_runs_as_a_command(tmp_path):
    _mirror(tmp_path / "data")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DOMSUM_DATA_DIR")}
    env["DOMSUM_VOCAB_DIR"] = str(tmp_path / "vocab")
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "build-vocab", "--task", "adapteval_arxiv",
         "--data-dir", str(tmp_path / "data"), "--size", "3"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert load_vocabulary(tmp_path / "vocab" / "adapteval" / "arxiv.tsv") == ["lattice", "3", "model"]
