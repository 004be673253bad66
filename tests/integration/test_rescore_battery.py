"""The medqsum battery through the real ``domsum rescore``, offline, with models missing:
each family whose model cannot be had is skipped and counted with its reason, and every
other family (a model family included) is scored. Before, the first missing model
(BERTScore's roberta-large) ended the command with exit 2 and nothing scored."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from conftest import subprocess_env
from helpers.rescore import _outputs

MISSING = ("bertscore_sci", "blanc_help", "blanc_tune", "perplexity", "mauve")


def test_battery_skips_each_missing_model_counts_it_and_scores_the_rest(tmp_path, minilm_path):
    samples = tmp_path / "samples_medqsum_hcm_2024-06-01T10-20-30.jsonl"
    samples.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": f"medqsum/hcm/test/{i}", "question": f"Is drug {i} safe with aspirin for my mother?",
                             "summary": f"Is drug {i} safe with aspirin?"},
        "target": f"Is drug {i} safe with aspirin?", "resps": [[f"Is drug {i} safe?"]],
        "filtered_resps": [f"Is drug {i} safe?"], "filter": "none"}) + "\n" for i in range(4)))
    gone = str(tmp_path / "no-such-model")  # offline and absent: not available, whatever the machine caches
    metadata = {"bertscore_model": minilm_path, "bertscore_layers": 6, "sci_bertscore_model": gone,
                "blanc_model": gone, "ppl_model": gone, "mauve_model": gone}
    proc = subprocess.run([str(Path(sys.executable).with_name("domsum")), "rescore", str(samples),
                           "--metadata", json.dumps(metadata), "--out", str(tmp_path / "out")],
                          env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    scores, summary = _outputs(tmp_path / "out", samples)
    assert sorted(summary["skipped"]) == sorted(MISSING)
    for family, reason in summary["skipped"].items():
        assert "is not available" in reason and gone in reason, (family, reason)
    assert f"; skipped {len(MISSING)}: " in proc.stdout
    for key in ("bertscore_sci_f1", "blanc_help", "blanc_tune", "perplexity", "mauve"):
        assert summary["metrics"][key] is None and all(row[key] is None for row in scores)
    # the families that could run did: their corpus numbers are the mean of their document values
    for key in ("rouge1", "rougeL", "meteor", "bertscore_f1"):
        per_doc = [row[key] for row in scores]
        assert all(isinstance(v, float) and math.isfinite(v) for v in per_doc), key
        assert math.isclose(summary["metrics"][key], sum(per_doc) / len(per_doc), rel_tol=1e-9), key
    for key in ("bleu", "chrf", "cider"):
        assert isinstance(summary["metrics"][key], float) and summary["metrics"][key] > 0, key
