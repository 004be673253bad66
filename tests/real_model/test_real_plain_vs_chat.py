"""Which is better, and how sure: SmolLM2 plain vs its chat template on 24 CNN/DM-style documents.

The report's answer to a researcher comparing two settings of one real model is its
first table (DomainSum Table 2's layout, the paper's published rows beside the user's)
and one verdict sentence per comparison. With 3 documents no permutation test can find
anything; 24 documents (``tests/fixtures/cnndm24``, invented CNN-style articles, see its
README) are enough for a verdict either way. Every number checked here is recomputed from
the two runs' logged samples, with the paired permutation test written out again from its
documented rule (sign flips drawn from the caption's seed), never by calling the report's
statistics.
"""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, minilm_dir, own_samples, report_table, run_lm_eval, subprocess_env
from helpers.report import holm_adjusted

TASK = "domainsum_cnndm"
MIRROR = ROOT / "tests" / "fixtures" / "cnndm24"
DOCS, WINDOW, GEN = 24, 640, 32
#: the comparison keys: corpus ROUGE (geometric mean of the ROUGE-1/2/L means) and two plain means
KEYS = ("rouge_geo", "rouge_mean", "bertscore_f1")
ALPHA = 0.05


@pytest.fixture(scope="module")
def pair(smollm2_checkpoint, tmp_path_factory) -> dict:
    """Plain and chat-template runs of the zero-shot task on the 24 documents, and their report."""
    root = tmp_path_factory.mktemp("plain_vs_chat")
    meta = json.dumps({"data_dir": str(MIRROR), "bertscore_model": minilm_dir(), "bertscore_layers": 6})
    env = subprocess_env(OMP_NUM_THREADS="1")
    runs = {}
    for label, extra in (("plain", []), ("chat", ["--apply_chat_template"])):
        runs[label] = root / label
        # batches of 8: half the CPU time of one document at a time, the same generations (greedy)
        run_lm_eval(["--model", "hf", "--model_args", f"pretrained={smollm2_checkpoint},max_length={WINDOW}",
                     "--batch_size", "8", "--tasks", TASK, "--limit", str(DOCS), "--log_samples",
                     "--gen_kwargs", f"max_gen_toks={GEN}", "--metadata", meta, *extra], runs[label], env=env)
    out = root / "report"
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "report", str(runs["plain"]),
                           str(runs["chat"]), "--out", str(out), "--no-progress"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    samples = {label: {s["doc_id"]: s for s in own_samples(folder, TASK)} for label, folder in runs.items()}
    return {"out": out, "samples": samples, "system": smollm2_checkpoint.name,
            "comparisons": json.loads((out / "comparisons.json").read_text(encoding="utf-8"))["comparisons"]}


def _corpus(key: str, rows: list[dict]) -> float:
    """The key's corpus value over logged samples: ROUGE's geometric mean of the three column
    means (DomainSum's stated ROUGE), otherwise the mean of the per-document scores."""
    if key == "rouge_geo":
        means = [sum(s[k] for s in rows) / len(rows) for k in ("rouge1", "rouge2", "rougeL")]
        return math.prod(means) ** (1 / 3)
    return sum(s[key] for s in rows) / len(rows)


def _side(pair: dict, label: str) -> str:
    """Which run a comparison's side is: the chat system's label ends in ' (chat)' (Settings)."""
    return "chat" if f"{pair['system']} (chat)" in label else "plain"


def _sign_flip_p(key: str, a: list[dict], b: list[dict], resamples: int, seed: int) -> float:
    """Two-sided paired permutation p of S(a) − S(b): each row of ``default_rng(seed).random((resamples,
    n)) < 0.5`` swaps those documents' pairs; p = 2 min(P(null ≤ obs), P(null ≥ obs)) with the +1
    correction of a random (not exact) test, clipped at 1."""
    swaps = np.random.default_rng(seed).random((resamples, len(a))) < 0.5
    observed = _corpus(key, a) - _corpus(key, b)
    null = np.array([_corpus(key, [y if s else x for x, y, s in zip(a, b, row)])
                     - _corpus(key, [x if s else y for x, y, s in zip(a, b, row)]) for row in swaps])
    tie = 1e-9 * float(np.abs(null).max())
    low = (np.sum(null <= observed + tie) + 1) / (resamples + 1)
    high = (np.sum(null >= observed - tie) + 1) / (resamples + 1)
    return min(1.0, 2 * min(low, high))


def test_both_runs_summarized_the_24_documents(pair):
    for label, by_doc in pair["samples"].items():
        assert sorted(by_doc) == list(range(DOCS)), label
        assert sum(bool(s["resps"][0][0].strip()) for s in by_doc.values()) >= DOCS // 2, label


def test_the_page_says_how_many_generations_were_empty(pair):
    """An empty summary scores 0 everywhere: the page's notes and Runs table give each run's
    count, which the test recounts from the logged generations."""
    md = (pair["out"] / "report.md").read_text(encoding="utf-8")
    page = (pair["out"] / "report.html").read_text(encoding="utf-8")
    for label, by_doc in pair["samples"].items():
        empty = sum(not s["resps"][0][0].strip() for s in by_doc.values())
        system = f"{pair['system']} (chat)" if label == "chat" else pair["system"]
        note = f"{system}, {TASK}: {empty} of {DOCS} generations are empty"
        assert (note in md and note in page) == (empty > 0), (label, empty)
        assert f"<td>{empty} of {DOCS}</td>" in page, label


def test_first_table_is_domainsum_table2_with_the_papers_rows(pair):
    out, name = pair["out"], pair["system"]
    md = (out / "report.md").read_text(encoding="utf-8")
    first_md = re.findall(r"^## (.+)$", md, flags=re.M)
    assert first_md[:2] == ["Verdicts", "DomainSum Table 2 layout, genre shift: 0-shot and 2-shot per domain"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert re.findall(r'<h3 id="([^"]+)"', page)[:2] == ["verdicts", "domainsum_table2_genre"]
    rows = report_table(out, "domainsum_table2_genre")
    rouge, bert = "CNN/DM ROUGE: 0-shot (2-shot − 0-shot; p)", "CNN/DM BERTScore: 0-shot (2-shot − 0-shot; p)"
    assert list(rows[0]) == ["System", "Source", rouge, bert, "Protocol vs the paper"]
    mine = {r["System"]: r for r in rows if r["Source"] == "this run"}
    assert set(mine) == {name, f"{name} (chat)"}
    scores = {}
    for system, label in ((name, "plain"), (f"{name} (chat)", "chat")):
        logged = list(pair["samples"][label].values())
        for column, key in ((rouge, "rouge_geo"), (bert, "bertscore_f1")):
            scores[system, column] = 100 * _corpus(key, logged)
            assert mine[system][column].rstrip("†") == f"{scores[system, column]:.2f}", (system, column)
    for column in (rouge, bert):  # † marks the better of this run's two zero-shot rows
        best = max((name, f"{name} (chat)"), key=lambda s: scores[s, column])
        assert [s for s in mine if mine[s][column].endswith("†")] == [best], column
    # the paper's rows, as its data file prints them, below the user's: value (2-shot − 0-shot)
    data = json.loads((ROOT / "lm_eval_tasks/published/domainsum.json").read_text(encoding="utf-8"))
    cells = {(v["model"], v["metric"], v["setting"]): v["value"] for v in data["values"]
             if v["table"] == "Table 2" and v.get("subset") == "cnndm"}
    theirs = {r["System"]: r for r in rows if r["Source"] != "this run"}
    models = sorted({m for m, _, s in cells if s == "0-shot"})
    assert models and set(theirs) == {f"{m} (published)" for m in models}
    assert [r["Source"] for r in rows[:2]] == ["this run", "this run"]
    for model in models:
        row = theirs[f"{model} (published)"]
        assert row["Source"] == f"DomainSum Table 2, row {model}"
        for column, metric in ((rouge, "ROUGE"), (bert, "BERTScore")):
            zero, diff = cells[model, metric, "0-shot"], cells[model, metric, "2-shot minus 0-shot"]
            cell = re.fullmatch(r"(-?\d+\.\d\d)†? \(([+-]\d+\.\d\d)‡?\)", row[column])
            assert cell and cell.groups() == (f"{zero:.2f}", f"{diff:+.2f}"), (model, column, row[column])


def test_paper_rows_say_how_each_run_differs_from_the_papers_protocol(pair):
    """Each of the two systems in DomainSum Table 2's layout is checked against the paper's
    protocol (domainsum.json "protocols", Table 2): ``paper_rows.json`` says not comparable,
    with the encoder (MiniLM layer 6, as the runs' metadata asked; the paper's roberta-large
    layer 17) and the document count (recounted from each run's samples file; the paper's 500
    sampled test documents); the page says the same sentence beside each system's row in the
    HTML and the Markdown."""
    out, name = pair["out"], pair["system"]
    data = json.loads((ROOT / "lm_eval_tasks/published/domainsum.json").read_text(encoding="utf-8"))
    protocol = data["protocols"]["Table 2"]
    encoder = protocol["metrics"]["BERTScore"]
    rows = json.loads((out / "paper_rows.json").read_text(encoding="utf-8"))
    table2 = {r["run"]: r for r in rows if r["table"] == "domainsum_table2_genre"}
    assert set(table2) == {name, f"{name} (chat)"} and len(rows) == 2  # SmolLM2 is no model of the paper's
    md = (out / "report.md").read_text(encoding="utf-8")
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    for system, label in ((name, "plain"), (f"{name} (chat)", "chat")):
        row = table2[system]
        assert (row["comparable"], row["benchmark"], row["paper_table"]) == (False, "domainsum", "Table 2")
        found = {d["field"]: d for d in row["differences"]}
        bert = [d for f, d in found.items() if "encoder" in f.lower() or "bertscore" in f.lower()]
        assert {(d["run"], d["paper"]) for d in bert} >= {("all-MiniLM-L6-v2", encoder["encoder"]),
                                                          (6, encoder["layer"])}, row
        docs = [d for f, d in found.items() if "document" in f or "test" in f]
        logged = len(pair["samples"][label])  # the documents the run scored, from its samples file
        assert [(d["run"], d["paper"]) for d in docs] == [(logged, protocol["documents"]["count"])], row
        sentence = row["sentence"]
        for part in (f"{logged} of {protocol['documents']['count']} test documents",
                     f"encoder all-MiniLM-L6-v2 layer 6 (paper: {encoder['encoder']} layer {encoder['layer']})"):
            assert part in sentence, (part, sentence)
        cell = f"✗ {sentence}"
        assert re.search(rf"^\| {re.escape(system)} \| this run \|[^\n]*\| {re.escape(cell)} \|$", md, flags=re.M)
        assert re.search(rf"<tr><td[^>]*>{re.escape(system)}</td><td>this run</td>(?:<td[^>]*>[^<]*</td>)*?"
                         rf"<td[^>]*>{re.escape(cell)}</td></tr>", page), system


def test_every_comparison_has_a_verdict_sentence_that_agrees(pair):
    comparisons = pair["comparisons"]
    assert {c["metric"] for c in comparisons} == set(KEYS) and len(comparisons) == len(KEYS)
    page = (pair["out"] / "report.html").read_text(encoding="utf-8")
    said = dict(re.findall(r'<li data-comparison="(\d+)">([^<]+)</li>', page))
    md = (pair["out"] / "report.md").read_text(encoding="utf-8")
    assert sorted(map(int, said)) == list(range(len(comparisons)))
    assert all(c["reason"] is None for c in comparisons)  # every document scored on both sides: all computed
    for i, c in enumerate(comparisons):
        sentence = html.unescape(said[str(i)])
        assert f"\n{i}. {sentence}\n" in md  # the Markdown page says the same
        scale = c["display_scale"]
        outcome = {"a better": f"{c['a']} is better than {c['b']}", "b better": f"{c['b']} is better than {c['a']}",
                   "no difference detected": f"no difference detected between {c['a']} and {c['b']}"}[c["verdict"]]
        assert sentence.startswith(f"cnndm, {c['metric_name']}: {outcome}. "), sentence
        level = f"{100 * (1 - ALPHA / c['family_size']):.4g}"
        assert c["ci_level"] == pytest.approx(1 - ALPHA / c["family_size"])
        for part in (f"= {c['delta'] * scale:+.2f}, {level} % CI [{c['ci_low'] * scale:.2f}, "
                     f"{c['ci_high'] * scale:.2f}]", f"p = {c['p']:.3f}", f"Holm-corrected p = {c['p_corrected']:.3f}",
                     f"n = {c['n']} documents scored on both sides", f"minimum detectable difference "
                     f"{c['min_detectable_delta'] * scale:.2f}"):
            assert part in sentence, (part, sentence)
    # the verdicts follow the stated rule: Holm over the comparisons of one metric in one table,
    # a side better when the corrected p < 0.05 and the interval (at 1 − 0.05/m) excludes 0, and the
    # interval shown excludes 0 exactly then
    families: dict[tuple, list[int]] = {}
    for i, c in enumerate(comparisons):
        families.setdefault((c["table"], c["metric"]), []).append(i)
    for members in families.values():
        for i, corrected in zip(members, holm_adjusted([comparisons[i]["p"] for i in members])):
            c = comparisons[i]
            assert c["p_corrected"] == pytest.approx(corrected, abs=1e-12) and c["family_size"] == len(members)
            found = corrected < ALPHA and not c["ci_low"] <= 0 <= c["ci_high"]
            higher = "a" if (c["delta"] > 0) == (c["direction"] == "a-b") else "b"
            assert c["verdict"] == (f"{higher} better" if found else "no difference detected"), c
            assert (c["ci_low"] > 0 or c["ci_high"] < 0) == found, c


def test_each_comparison_is_recomputed_from_the_logged_samples(pair):
    """Δ, n, the interval around Δ, p (seeded sign-flip test from the caption's seed and count)
    and, for the means, the minimum detectable difference."""
    from scipy import stats

    md = (pair["out"] / "report.md").read_text(encoding="utf-8")
    resamples, seed = map(int, re.search(r"permutation test \(documents' scores swapped between the two runs\), "
                                         r"(\d+) resamples \(exact when 2\^n is fewer\), seed (\d+)\.", md).groups())
    assert 2 ** DOCS > resamples  # a random, not an exact, test at this n
    for c in pair["comparisons"]:
        assert c["direction"] == "a-b" and c["task"] == TASK and c["table"] == "significance"
        a, b = (pair["samples"][_side(pair, c[side])] for side in ("a", "b"))
        assert {_side(pair, c["a"]), _side(pair, c["b"])} == {"plain", "chat"}
        shared = sorted(set(a) & set(b))
        xa, xb = [a[d] for d in shared], [b[d] for d in shared]
        key = c["metric"]
        delta = _corpus(key, xa) - _corpus(key, xb)
        assert c["n"] == len(shared) == DOCS
        assert c["delta"] == pytest.approx(delta, abs=1e-12), key
        assert c["ci_low"] < delta < c["ci_high"], c
        assert c["p"] == pytest.approx(_sign_flip_p(key, xa, xb, resamples, seed), abs=1e-12), key
        if key != "rouge_geo":  # a mean: SE = sd of the per-document differences / sqrt(n)
            d = np.array([x[key] - y[key] for x, y in zip(xa, xb)])
            level = ALPHA / c["family_size"]  # the family's level: Bonferroni over its comparisons
            mdd = (stats.t.ppf(1 - level / 2, DOCS - 1) + stats.t.ppf(0.8, DOCS - 1)) * d.std(ddof=1) / DOCS ** 0.5
            assert c["min_detectable_delta"] == pytest.approx(mdd, rel=1e-9), key
