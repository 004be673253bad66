"""The installed ``domsum`` command in a subprocess: its help, its task list and the include path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from conftest import ROOT, subprocess_env
from lm_eval_tasks import catalog


def _domsum(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("domsum")
    assert exe.is_file(), "the domsum console script is missing: pip install -e ."
    return subprocess.run([str(exe), *args], cwd=cwd, env=subprocess_env(), capture_output=True,
                          text=True, timeout=120)


def test_domsum_help_lists_every_subcommand(tmp_path):
    from lm_eval_tasks.commands import COMMANDS

    proc = _domsum("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in COMMANDS:
        assert f"\n    {name}" in proc.stdout, name
    sub = _domsum("rescore", "--help", cwd=tmp_path)
    assert sub.returncode == 0 and "usage: domsum rescore" in sub.stdout


def test_domsum_tasks_lists_the_catalogue(tmp_path):
    proc = _domsum("tasks", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for spec in catalog.all_tasks().values():
        row = next(ln.split() for ln in lines if ln.split()[:1] == [spec.name])
        assert row[1:6] == [spec.benchmark, spec.subset, spec.level or "-", str(spec.shots), spec.variant or "-"]
        assert row[6] == ",".join(spec.families)
    for group in catalog.all_groups():
        assert any(ln.split()[:1] == [group] for ln in lines), group


def test_include_path_matches_python_m(tmp_path):
    cmd = _domsum("include-path", cwd=tmp_path)
    mod = subprocess.run([sys.executable, "-m", "lm_eval_tasks"], cwd=tmp_path, env=subprocess_env(),
                         capture_output=True, text=True, timeout=120)
    assert cmd.returncode == mod.returncode == 0, cmd.stderr + mod.stderr
    assert cmd.stdout == mod.stdout and Path(cmd.stdout.strip()) == ROOT / "lm_eval_tasks"
