"""``domsum domain-stats`` run as a command in a subprocess."""

from __future__ import annotations

import subprocess
import sys


from conftest import ROOT, subprocess_env


def test_cli_runs_as_a_command(fixture_data_dir, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "domain-stats", "--subsets", "reddit,wikihow",
         "--data-dir", str(fixture_data_dir), "--out", str(tmp_path), "--quiet", "--no-plots",
         "--workers", "1"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "| genre | reddit |" in proc.stdout
    assert (tmp_path / "domain_stats.csv").is_file()
