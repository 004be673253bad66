"""``domsum demo``: the real command, offline, into a folder that stays.

Users reported a demo that took minutes, scored ROUGE 0 everywhere (its random model
repeated one punctuation token), deleted its output and failed from a wheel. The
end-to-end test runs the command as a user does (one subprocess: model training,
``lm_eval``, report) and checks what it leaves behind against ``rouge-score`` itself;
the others check the cached model and the flags without running the harness.
"""

from __future__ import annotations

import glob
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import subprocess_env
from lm_eval_tasks import catalog
from lm_eval_tasks import demo


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """One default ``domsum demo`` into a fresh folder, from another working directory."""
    tmp = tmp_path_factory.mktemp("demo")
    out = tmp / "kept"
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "demo", "--out", str(out), "--no-progress"],
                          cwd=tmp, env=subprocess_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return out, proc


@pytest.mark.slow
def test_demo_keeps_its_output_and_scores_above_zero(demo_run):
    from rouge_score import rouge_scorer

    out, proc = demo_run
    results_files = sorted(glob.glob(str(out / "runs" / "*" / "*" / "results_*.json")))
    assert len(results_files) == 1, results_files
    results = json.loads(Path(results_files[0]).read_text())
    tasks = catalog.expand(demo.DEFAULT_TASKS.split(","))
    assert tasks and set(tasks) <= set(results["results"])  # every task the default list expands to
    assert results["config"]["model_args"]["pretrained"] == str(out / "tiny-gpt2")
    assert results["config"]["limit"] == 2 and results["config"]["gen_kwargs"] == {"max_gen_toks": 64}

    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)   # DomainSum's release convention
    rouge1 = {}
    for task in tasks:
        value = results["results"][task]["rouge1,none"]
        assert math.isfinite(value) and 0.0 <= value <= 1.0, (task, value)
        assert math.isfinite(results["results"][task]["bertscore_f1,none"])
        # the timestamp after the name: "samples_domainsum_cnndm_*" would match the 2-shot task too
        pattern = f"samples_{task}_[0-9][0-9][0-9][0-9]-*.jsonl"
        rows = [json.loads(line) for f in glob.glob(str(out / "runs" / "*" / "*" / pattern))
                for line in Path(f).read_text().splitlines() if line.strip()]
        assert len(rows) == 2
        # the generations are words, not one repeated token, and the number is rouge-score's
        assert all(re.search(r"[A-Za-z]{3}", r["filtered_resps"][0]) for r in rows), [r["resps"] for r in rows]
        by_hand = sum(scorer.score(r["target"], r["filtered_resps"][0])["rouge1"].fmeasure for r in rows) / 2
        assert value == pytest.approx(by_hand, abs=1e-9), task
        rouge1[task] = value
    assert sum(v > 0 for v in rouge1.values()) >= 5, rouge1

    trained = json.loads((out / "tiny-gpt2" / "tiny_training.json").read_text())
    assert trained["steps"] == 150 and trained["examples"] == 20 and trained["last_loss"] < trained["first_loss"] / 2
    # the report, written and printed; where everything is, printed
    html, md = out / "report" / "report.html", out / "report" / "report.md"
    assert html.stat().st_size > 1000 and md.is_file()
    assert md.read_text(encoding="utf-8").strip() in proc.stdout
    assert f"demo: report {html}" in proc.stdout and f"demo: results {results_files[0]}" in proc.stdout
    assert Path(results_files[0]).parent.parent.joinpath("lm_eval.log").is_file()
    # run from a folder that is no git checkout: the harness's commit probe prints nothing
    assert "not a git repository" not in proc.stderr + proc.stdout


def test_demo_model_is_cached_by_recipe_and_deterministic(tmp_path):
    pairs = [("Summarize: the cat sat on the mat.\n\nSUMMARY:", "A cat sat."),
             ("Summarize: rain fell all day in the town.\n\nSUMMARY:", "It rained.")]
    first, log, reused = demo.demo_model(tmp_path / "a", pairs, steps=3, seed=0, progress=False)
    assert not reused and log["steps"] == 3 and log["examples"] == 2
    again, log_again, reused = demo.demo_model(tmp_path / "a", pairs, steps=3, seed=0, progress=False)
    assert reused and again == first and log_again == log
    _, _, reused = demo.demo_model(tmp_path / "a", pairs, steps=3, seed=1, progress=False)
    assert not reused                                      # another seed: another model
    _, log_b, _ = demo.demo_model(tmp_path / "b", pairs, steps=3, seed=1, progress=False)
    weights = [(tmp_path / d / "model.safetensors").read_bytes() for d in ("a", "b")]
    assert weights[0] == weights[1]                        # same recipe, same bytes
    assert log_b["first_loss"] != log["first_loss"]
