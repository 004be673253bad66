"""``import custom_metrics`` loads what a caller names, not every family: a ROUGE-only
caller imports no judge client, no FM and no statistics (a fresh interpreter, since
the test session has imported everything already)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import subprocess_env

CODE = """
import json, sys
import custom_metrics
from custom_metrics import rouge_scores
print(json.dumps(sorted(m for m in sys.modules if m.startswith("custom_metrics"))))
"""


def test_a_rouge_caller_imports_no_judge_fm_or_analysis():
    done = subprocess.run([sys.executable, "-c", CODE], env=subprocess_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "custom_metrics.rouge" in loaded
    heavy = [m for m in loaded if m.startswith(("custom_metrics.judge", "custom_metrics.fm",
                                                "custom_metrics.analysis", "custom_metrics.blanc"))]
    assert heavy == []
