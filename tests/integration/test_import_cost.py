"""``import custom_metrics`` loads what a caller names, not every family: a ROUGE-only
caller imports no judge client, no FM and no statistics; and the metric table, built by
importing every family module, loads no more than those light declarations and the
registry's core (a fresh interpreter, since the test session has imported everything
already)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT, subprocess_env

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
    assert "custom_metrics.families.rouge" in loaded
    # FM lives in the judge package, the domain measures and token shift in analysis
    heavy = [m for m in loaded if m.startswith(("custom_metrics.judge", "custom_metrics.analysis",
                                                "custom_metrics.families.blanc",
                                                # functions named like their modules, bound on first use too
                                                "custom_metrics.families.bertscore", "custom_metrics.families.dvo"))]
    assert heavy == []


TABLE = """
import json, sys
from custom_metrics import registry
rouge = registry.get("rouge")
assert registry.family_of(rouge.key_names[0]) is rouge
print(json.dumps({"modules": sorted(sys.modules), "families": sorted(registry.names())}))
"""
#: the light core a family module may import at module level (tests/unit/test_layout.py)
CORE = {"custom_metrics", "custom_metrics.registry", "custom_metrics.errors", "custom_metrics.tokenize",
        "custom_metrics.stopwords", "custom_metrics.setting", "custom_metrics.families"}
HEAVY = ("torch", "transformers", "openai", "httpx", "numpy", "sklearn", "bert_score", "sacrebleu", "nltk",
         "textstat", "rouge_score")


def test_a_registry_lookup_imports_the_family_modules_and_nothing_heavy():
    done = subprocess.run([sys.executable, "-c", TABLE], env=subprocess_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    ours = {m for m in out["modules"] if m.startswith("custom_metrics")}
    families = {m for m in ours if m.startswith("custom_metrics.families.")}
    # the whole table was built (every family module scanned), from that package alone
    declared = {f.stem for f in (ROOT / "custom_metrics" / "families").glob("*.py") if f.stem != "__init__"}
    assert families == {f"custom_metrics.families.{name}" for name in declared}
    assert {"rouge", "bertscore", "dvo", "judge"} <= set(out["families"])
    assert ours - families == CORE  # no judge client, FM, statistics, model cache or loaders
    assert [m for m in out["modules"] if m.split(".")[0] in HEAVY] == []
