"""scripts/gpu_check.sh: its arguments parse, and without a visible GPU it stops with one line, exit 2."""

from __future__ import annotations

import subprocess

from conftest import ROOT, subprocess_env


def _run(*args: str) -> subprocess.CompletedProcess:
    env = subprocess_env(CUDA_VISIBLE_DEVICES="")  # no GPU visible, on any machine
    return subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_no_gpu_is_one_line_and_exit_2():
    proc = _run("--limit", "2", "--skip-vllm")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == ["gpu_check: no CUDA GPU visible to PyTorch; run this on a GPU machine"]


def test_help_and_an_unknown_argument():
    shown = _run("--help")
    assert shown.returncode == 0 and "--model vllm" in shown.stdout and "scorer_device" in shown.stdout
    bad = _run("--bogus")
    assert bad.returncode == 2 and bad.stderr.strip() == "gpu_check: unknown argument --bogus (see --help)"
