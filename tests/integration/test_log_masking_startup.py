"""The start-up line the installation writes: plain ``lm_eval`` masks its log from the start.

Why a line at Python's start-up (lm_eval_tasks/build_hooks.py): plain ``lm_eval`` logs
``--model_args``, key and all, before any module of the suite is imported. The end-to-end
proof is tests/integration/test_api_model_keys.py; here, that the installed file is the one
the build hook writes, and that it acts in an ``lm_eval`` process and in no other.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import subprocess_env
from lm_eval_tasks.build_hooks import PTH_LINE, PTH_NAME

KEY_URL = "http://user:sk-startup-0123456789abcdef@host/v1/chat/completions"


def test_the_installation_holds_the_line_the_build_hook_writes():
    # the interpreter's site-packages, where README's install puts it (a checkout's own
    # egg-info on the path would answer importlib.metadata from the checkout)
    purelib = Path(sysconfig.get_paths()["purelib"])
    pth = purelib / PTH_NAME
    assert pth.is_file(), f"{pth} missing: reinstall as README says (pip install -e .)"
    assert pth.read_text(encoding="utf-8") == PTH_LINE
    [record] = purelib.glob("domsum_eval-*.dist-info/RECORD")
    listed = [line.split(",")[0] for line in record.read_text(encoding="utf-8").splitlines()]
    assert PTH_NAME in listed, "not in the RECORD: uninstalling would leave it"


@pytest.mark.parametrize("argv,masked", [
    (["python", "-m", "lm_eval", "run"], True),
    (["/venv/bin/python", "/venv/bin/lm_eval", "--model", "hf"], True),
    (["python", "-m", "lm_eval.__main__"], True),
    (["python", "-c", "pass"], False),
    (["/venv/bin/python", "/venv/bin/domsum", "report"], False),  # masks itself (lm_eval_tasks/cli.py)
    (["python", "-m", "pytest"], False),
])
def test_the_line_masks_log_records_in_an_lm_eval_process_only(argv, masked):
    code = (f"import sys, logging; sys.orig_argv = {argv!r}; exec({PTH_LINE!r}); "
            f"logging.basicConfig(format='%(message)s'); "
            f"logging.getLogger('lm_eval.evaluator').warning('with arguments: %s', {{'base_url': {KEY_URL!r}}}); "
            f"print(logging.getLogRecordFactory() is logging.LogRecord)")
    proc = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(not masked)
    assert ("user:***@host" in proc.stderr) == masked and ("sk-startup" in proc.stderr) == (not masked), proc.stderr
