"""``domsum fm-weights`` through the real CLI, and FM scoring with the weights it wrote.

The fitted numbers are checked against a recomputation with ``numpy.linalg.lstsq`` here:
the free fit directly, the default (weights summing to 1) through its KKT system.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import subprocess_env
from helpers.fm import JUDGE_ENV
from helpers.judge_server import StubJudgeServer, Text

TOPS = np.array([3, 4, 4, 3])  # the paper's scales: background, method, result, conclusion


def domsum(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", *args], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)


def _table(path: Path, n: int = 60, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(1, top + 1, n) for top in TOPS]) / TOPS
    y = np.round(X @ np.array([0.15, 0.35, 0.2, 0.3]) + rng.normal(0, 0.05, n), 4)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "background", "method", "result", "conclusion", "human"])
        w.writerows([i, *X[i], y[i]] for i in range(n))
    # what the CLI reads back from the CSV's text
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    return (np.array([[float(r[f]) for f in ("background", "method", "result", "conclusion")] for r in rows]),
            np.array([float(r["human"]) for r in rows]))


def _figures(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    rss = float(np.sum((y - X @ w) ** 2))
    return rss / len(y), 1 - rss / float(np.sum((y - y.mean()) ** 2))


def test_cli_fit_equals_lstsq_and_stands_beside_the_paper(tmp_path):
    X, y = _table(tmp_path / "scores.csv")
    free = domsum(["fm-weights", "scores.csv", "--free-sum", "--out", "free"], tmp_path)
    assert free.returncode == 0, free.stderr
    got = json.loads((tmp_path / "free" / "fm_weights.json").read_text())
    want = np.linalg.lstsq(X, y, rcond=None)[0]
    assert list(got["weights"].values()) == pytest.approx(want, abs=1e-10)
    mse, r2 = _figures(X, y, want)
    assert got["fit"]["mse"] == pytest.approx(mse, rel=1e-9) and got["fit"]["r2"] == pytest.approx(r2, rel=1e-9)
    assert got["fit"]["n"] == got["counts"]["read"] == len(y)

    paper = domsum(["fm-weights", "scores.csv", "--out", "paper"], tmp_path)
    assert paper.returncode == 0, paper.stderr
    got = json.loads((tmp_path / "paper" / "fm_weights.json").read_text())
    # minimise |y - X w|^2 subject to sum(w) = 1: [2 X'X 1; 1' 0] [w; lambda] = [2 X'y; 1]
    kkt = np.block([[2 * X.T @ X, np.ones((4, 1))], [np.ones((1, 4)), np.zeros((1, 1))]])
    want = np.linalg.lstsq(kkt, np.concatenate([2 * X.T @ y, [1.0]]), rcond=None)[0][:4]
    assert list(got["weights"].values()) == pytest.approx(want, abs=1e-10)
    assert got["fit"]["mse"] == pytest.approx(_figures(X, y, want)[0], rel=1e-9)
    assert got["fit"]["mse_paper_weights"] == pytest.approx(_figures(X, y, np.array([0.1, 0.3, 0.3, 0.3]))[0])
    # the paper's weights and MSE beside, marked, with the difference in words
    beside = {r["label"]: r for r in got["published"]}
    assert [beside[f"weight of {f}"]["published"] for f in ("background", "method", "result", "conclusion")] \
        == [0.1, 0.3, 0.3, 0.3]
    assert beside["mean squared error"]["published"] == 0.005
    assert beside["mean squared error"]["run_value"] == got["fit"]["mse"]
    assert all(not r["comparable"] and f"{len(y)} of 500" in r["sentence"] for r in got["published"])
    md = (tmp_path / "paper" / "fm_weights.md").read_text()
    assert "0.005 (published)" in md and md in paper.stdout
    assert "Beside the published fit" in (tmp_path / "paper" / "fm_weights.html").read_text()


def test_cli_bad_line_is_one_line_naming_file_line_and_field(tmp_path):
    (tmp_path / "bad.csv").write_text("background,method,result,conclusion,human\n1,1,1,1,1\n1,0.5,n/a,1,1\n")
    proc = domsum(["fm-weights", "bad.csv", "--out", "out"], tmp_path)
    assert proc.returncode == 2 and not (tmp_path / "out").exists()
    assert proc.stderr.strip() == "fm-weights: error: bad.csv, line 3: field 'result' is not a number: 'n/a'"
    assert domsum(["fm-weights", "--help"], tmp_path).stdout.startswith("usage: domsum fm-weights")


def test_fm_scores_with_the_fitted_weights(tmp_path, monkeypatch):
    """The fit's file as the setting fm_weights: FM combines the judge's ratings with it."""
    from lm_eval_tasks.commands.fm_weights import main as fit_main
    from lm_eval_tasks.commands.rescore import main as rescore_main

    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    _table(tmp_path / "scores.csv")
    assert fit_main([str(tmp_path / "scores.csv"), "--nonneg", "--out", str(tmp_path / "fit")]) == 0
    fitted = json.loads((tmp_path / "fit" / "fm_weights.json").read_text())["weights"]
    ref, cand = "REFERENCE about drug X.", "CANDIDATE about drug X."
    samples = tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.123456.jsonl"
    doc = {"id": "adapteval/pubmed/test/0", "document": "d", "summary": ref}
    samples.write_text(json.dumps({"doc_id": 0, "doc": doc, "target": ref, "resps": [[cand]],
                                   "filtered_resps": [cand], "filter": "none"}) + "\n")
    facets = {"background": "bg", "method": "me", "result": "re", "conclusion": "co"}
    with StubJudgeServer(time_limit_s=60) as srv:
        srv.on("Input: " + ref, Text(json.dumps({k: f"ref {v}" for k, v in facets.items()})))
        srv.on("Input: " + cand, Text(json.dumps({k: f"cand {v}" for k, v in facets.items()})))
        for facet, rating in zip(facets.values(), ("2", "3", "4", "1")):
            srv.on(f"Input1: 'ref {facet}'", Text(rating))
        srv.set_default(Text("1"))
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        argv = [str(samples), "--metrics", "fm", "--out-dir", str(tmp_path / "out"), "--judge-model", "stub-judge",
                "--judge-base-url", srv.url, "--judge-cache", "off",
                "--metadata", json.dumps({"fm_weights": str(tmp_path / "fit" / "fm_weights.json")})]
        assert rescore_main(argv) == 0
    score = json.loads((tmp_path / "out" / f"{samples.stem}.scores.jsonl").read_text().splitlines()[0])
    fractions = [2 / 3, 3 / 4, 4 / 4, 1 / 3]
    w = [fitted[f] for f in facets]
    assert score["fm_detail"]["fractions"] == pytest.approx(fractions)
    assert score["fm"] == pytest.approx(sum(a * b for a, b in zip(w, fractions)) / sum(w))
    assert score["fm"] != pytest.approx(0.1 * 2 / 3 + 0.3 * 0.75 + 0.3 + 0.1)  # not the paper's weights
    summary = json.loads((tmp_path / "out" / f"{samples.stem}.summary.json").read_text())
    assert json.loads(summary["record"]["fm_weights_used"]) == pytest.approx(w)  # the numbers, not the path
