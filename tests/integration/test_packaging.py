"""A built wheel (``pip install .``, as opposed to the editable install) is complete.

Why: the task YAMLs load their glue with ``!function utils.load``; a wheel that carries
the YAMLs but not the folder's ``utils.py`` installs cleanly and then fails at the first
``lm_eval`` run; one without the sample mirror breaks ``domsum demo``. This builds the
real wheel, compares it with the source tree, installs it into a bare directory and runs
the real ``lm_eval`` CLI from there alone, on the installed sample mirror.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, subprocess_env
from lm_eval_tasks import sample_data_dir

TASK_FILES = ("*.py", "*.yaml", "*_yaml", "README.md")


def source_copy(dest: Path) -> Path:
    """The project's files (tracked and untracked-but-not-ignored) copied to ``dest``.

    Building from a copy keeps the build from writing ``build/`` into the checkout and
    from reading a stale ``*.egg-info/SOURCES.txt`` there, which can list files the
    package configuration itself would leave out.
    """
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, f"git ls-files failed in {ROOT}: {listed.stderr}"
    for rel in filter(None, listed.stdout.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = source_copy(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("wheel")
    # --no-build-isolation: build with this environment's setuptools, no download
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                           "--no-build-isolation", "-w", str(out), "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    wheels = list(out.glob("domsum_eval-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {out}: {list(out.iterdir())}"
    return wheels[0]


def test_wheel_carries_every_task_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    source = {p.relative_to(ROOT).as_posix() for pat in TASK_FILES
              for p in (ROOT / "lm_eval_tasks").rglob(pat) if "__pycache__" not in p.parts}
    assert any(s.endswith("ccsbench/utils.py") for s in source)  # the glob found the glue
    missing = sorted(source - names)
    assert not missing, f"wheel lacks {missing}"
    for pkg in ("custom_metrics/__init__.py", "custom_metrics/analysis/__init__.py", "lm_eval_tasks/cli.py",
                "lm_eval_tasks/commands/prepare_data.py", "finetune/__init__.py"):
        assert pkg in names
    assert not [n for n in names if n.startswith(("scripts/", "tests/"))], "the wheel ships no scripts or tests"
    # the sample mirror `domsum demo` runs on, every file of it
    sample = {p.relative_to(ROOT).as_posix() for p in sample_data_dir().rglob("*") if p.is_file()}
    assert "lm_eval_tasks/sample_data/domainsum/samsum/test.jsonl" in sample and len(sample) > 80
    assert not sorted(sample - names), f"wheel lacks sample data {sorted(sample - names)[:5]}"
    # the papers' published numbers the report shows beside the user's (lm_eval_tasks/published)
    from lm_eval_tasks import published
    data = {p.relative_to(ROOT).as_posix() for p in published.FOLDER.glob("*.json")}
    assert "lm_eval_tasks/published/domainsum.json" in data
    assert not sorted(data - names), f"wheel lacks published numbers {sorted(data - names)}"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "domsum = lm_eval_tasks.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_lm_eval_runs_from_the_installed_wheel(wheel, tmp_path, tiny_causal_lm):
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile",
                           "--target", str(target), str(wheel), "-q"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # only the installed copy is importable: PYTHONPATH is the target, cwd is elsewhere
    env = subprocess_env(PYTHONPATH=str(target), OPENAI_API_KEY="", OPENAI_BASE_URL="")
    where = subprocess.run([sys.executable, "-m", "lm_eval_tasks"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr[-3000:]
    include = where.stdout.strip()
    assert Path(include).resolve() == (target / "lm_eval_tasks").resolve()
    # the installed package finds its own sample mirror, and the demo's options parse there
    installed = subprocess.run([sys.executable, "-c", "import lm_eval_tasks; print(lm_eval_tasks.sample_data_dir())"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr[-3000:]
    sample = Path(installed.stdout.strip())
    assert sample.resolve() == (target / "lm_eval_tasks" / "sample_data").resolve()
    assert (sample / "ccsbench" / "length" / "test.jsonl").is_file()
    demo_help = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "demo", "--help"], cwd=tmp_path,
                               env=env, capture_output=True, text=True, timeout=120)
    assert demo_help.returncode == 0 and "--data-dir" in demo_help.stdout, demo_help.stderr[-3000:]
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                          f"pretrained={tiny_causal_lm}", "--include_path", include,
                          "--tasks", "ccsbench_length,medqsum_hcm", "--limit", "1",
                          "--gen_kwargs", "max_gen_toks=8", "--output_path", str(out),
                          "--metadata", json.dumps({"data_dir": str(sample),
                                                    "medqsum_metrics": "rouge,bleu"})],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-6000:]
    res = json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())["results"]
    assert 0.0 <= res["ccsbench_length"]["rougeL,none"] <= 1.0
    assert "length_mad,none" in res["ccsbench_length"]
    assert 0.0 <= res["medqsum_hcm"]["rougeL,none"] <= 1.0
