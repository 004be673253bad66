"""``domsum cross-domain`` run as a command in a subprocess."""

from __future__ import annotations

import subprocess
import sys


from conftest import ROOT, subprocess_env
from helpers.images import assert_png
from helpers import cross_domain as shared


cross_root = shared.cross_root  # a fixture, shared with the other half of these tests


def test_cli_runs_as_a_command(cross_root, tmp_path):
    root, _ = cross_root
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "cross-domain", str(root), "--out",
         str(tmp_path / "cli"), "--group_by", "none", "--metrics", "rouge_geo", "--mask-diagonal"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| cnndm | 40.00 | 20.00 | 36.00 |" in proc.stdout
    assert_png(tmp_path / "cli" / "cross_domainsum_rouge_geo_m1.png")
