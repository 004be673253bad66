"""``domsum rescore`` dispatches through the metric registry.

Why these tests: re-scoring a ``--log_samples`` file must report exactly what the
registry (and so a harness run) reports for the same predictions, for every family,
CCSBench controls included, and a key choice must restrict both the output and the
judge calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from custom_metrics import registry
from lm_eval_tasks.commands.rescore import main
from helpers.rescore import _outputs


WORDS = "seed banks store samples and germination tests measure viability of crops".split()

#: (prediction words, requested length bin, keywords, readability)
ROWS = [(30, 0, ["seed banks"], "normal"), (80, 1, ["germination", "viability"], "high"),
        (130, 2, ["crops"], "normal"), (60, 2, ["absent keyword"], "high")]


def _text(n: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n))


def _write_ccs_samples(path: Path) -> registry.Batch:
    """A CCSBench samples file as lm-eval writes it; returns the batch the tasks would score."""
    lines, preds, refs, docs, extras = [], [], [], [], []
    for i, (n, length_bin, keywords, readability) in enumerate(ROWS):
        doc = {"id": f"ccs-compositional-test-{i}", "document": f"Document {i}. " + _text(200),
               "summary": _text(40 + 10 * i), "length_bin": length_bin, "keywords": json.dumps(keywords),
               "readability": readability, "focus": "high"}
        pred = _text(n)
        lines.append(json.dumps({"doc_id": i, "doc": doc, "target": doc["summary"], "resps": [[f" {pred} "]],
                                 "filtered_resps": [f" {pred} "], "filter": "none"}))
        preds.append(pred)
        refs.append(doc["summary"])
        docs.append(doc["document"])
        extras.append({"id": doc["id"], "task": "ccsbench_compositional", "length_bin": length_bin,
                       "keywords": keywords, "readability": readability, "focus": "high"})
    path.write_text("\n".join(lines) + "\n")
    return registry.Batch(predictions=preds, references=refs, documents=docs, extras=extras)


def test_rescore_equals_registry_score_corpus(tmp_path, monkeypatch):
    monkeypatch.delenv("DOMSUM_JUDGE_MODEL", raising=False)
    samples = tmp_path / "samples_ccsbench_compositional_2024-06-01T10-20-30.123456.jsonl"
    batch = _write_ccs_samples(samples)
    families = ["rouge", "ccs_length", "ccs_keywords", "ccs_readability"]
    argv = [str(samples), "--metrics", ",".join(families + ["ccs_focus"]), "--out-dir", str(tmp_path / "o")]
    assert main(argv) == 0
    scores, summary = _outputs(tmp_path / "o", samples)

    ctx = registry.Context(benchmark="ccsbench", subset="compositional")
    assert summary["metrics"] == registry.score_corpus(families, batch, ctx)
    assert summary["benchmark"] == "ccsbench" and summary["domain"] == "compositional"
    # the judged control is skipped without a judge, as in the tasks
    assert summary["skipped"] == {"ccs_focus": "no judge configured (--judge-model or DOMSUM_JUDGE_MODEL)"}
    per = registry.get("ccs_length").score(batch, ctx)
    assert [s["length_mad"] for s in scores] == per["length_mad"]
    assert [s["length_pcc"] for s in scores] == per["length_pcc"]
    # NaN per-document values (readability not asked of that document) are written as null
    assert [s["fkgl_high"] is None for s in scores] == [True, False, True, False]
    assert summary["record"]["rouge_stemming"] is True


def test_a_key_restricts_the_output_to_it(tmp_path):
    samples = tmp_path / "samples_ccsbench_compositional_2024-06-01T10-20-30.jsonl"
    batch = _write_ccs_samples(samples)
    assert main([str(samples), "--metrics", "rouge1,length_mad,meteor"]) == 0
    scores, summary = _outputs(tmp_path, samples)
    assert set(summary["metrics"]) == {"rouge1", "length_mad", "meteor"}
    assert set(scores[0]) == {"doc_id", "id", "filter", "prediction", "rouge1", "length_mad", "meteor"}
    ctx = registry.Context(benchmark="ccsbench", subset="compositional")
    assert summary["metrics"]["rouge1"] == registry.score_corpus(["rouge"], batch, ctx)["rouge1"]
    # a battery key runs its own family only (each battery family loads a model of its own)
    assert "meteor_tokenizer" in summary["record"] and "bertscore_model_used" not in summary["record"]


def test_unknown_metric_lists_the_registry_families(tmp_path, capsys):
    samples = tmp_path / "samples_ccsbench_compositional_2024-06-01T10-20-30.jsonl"
    _write_ccs_samples(samples)
    assert main([str(samples), "--metrics", "rouge,nonsense"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'nonsense'" in err
    assert all(name in err for name in registry.names())


RELEASE_ROWS = [
    ("pubmed-0", "Aspirin reduces stroke risk in older patients.",
     "Aspirin reduces stroke risk among elderly patients.",
     "Background: aspirin, given daily, \"reduced\" strokes,\nacross 3 cohorts of older patients."),
    ("pubmed-1", "The vaccine proved effective in young children.",
     "Vaccination proved effective for children under five.",
     "A trial of the vaccine in 400 children."),
    ("pubmed-2", "The trial found no cognitive benefit of statins.",
     "No cognitive benefit of statins was found in the trial.",
     "We studied statins and memory."),
]


def _write_adapteval_csv(path: Path) -> list[dict[str, float]]:
    """An AdaptEval-release-style prediction CSV whose rouge columns are rouge-score's own numbers."""
    import csv

    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    expected = []
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["doc_id", "prompt_0", "prediction", "reference", "rouge1", "rouge2", "rougeL", "article"])
        for doc_id, pred, ref, article in RELEASE_ROWS:
            s = scorer.score(ref, pred)
            row = {k: s[k].fmeasure for k in ("rouge1", "rouge2", "rougeL")}
            expected.append(row)
            w.writerow([doc_id, f"Summarize: {article}", pred, ref, row["rouge1"], row["rouge2"], row["rougeL"],
                        article])
    return expected


def _rouge_reference(batch: registry.Batch, benchmark: str, subset: str, meta: dict) -> dict[str, list]:
    """What the registry's ROUGE family gives ``batch`` under the settings ``meta`` resolves to."""
    from lm_eval_tasks import settings

    fam = registry.get("rouge")
    ctx = registry.Context(benchmark=benchmark, subset=subset, settings=settings.resolve_many(meta, fam.settings))
    return fam.score(batch, ctx)


def test_adapteval_release_csv_matches_its_rouge_columns_row_for_row(tmp_path):
    path = tmp_path / "pubmed_predictions.csv"
    expected = _write_adapteval_csv(path)
    assert main([str(path), "--task", "adapteval_pubmed", "--metrics", "rouge", "--out-dir", str(tmp_path / "o"),
                 "--metadata", json.dumps({"rouge_stemming": True})]) == 0
    scores, summary = _outputs(tmp_path / "o", path)
    assert summary["input_format"] == "csv" and summary["n_samples"] == 3
    assert summary["columns"] == {"prediction": "prediction", "reference": "reference", "document": "article",
                                  "id": "doc_id"}
    assert [s["doc_id"] for s in scores] == ["pubmed-0", "pubmed-1", "pubmed-2"]
    for row, want in zip(scores, expected):
        for k, v in want.items():
            assert row[k] == pytest.approx(v, abs=1e-12)
    assert all(w["rouge2"] > 0 for w in expected)  # every key is exercised, not only zeros
    for k in ("rouge1", "rouge2", "rougeL"):
        assert summary["agreement"][k]["max_abs_diff"] <= 1e-12
        assert summary["agreement"][k]["n_compared"] == 3 and summary["agreement"][k]["file_scale"] == 1
    assert summary["bootstrap"]["resamples"] == 1000 and summary["bootstrap"]["seed"] == 1234
    for k in ("rouge1", "rouge2", "rougeL", "rouge_mean", "rouge_geo"):
        low, high = summary["intervals"][k]
        assert low <= summary["metrics"][k] <= high
    assert summary["intervals_not_computed"] == {}
    assert summary["skipped_rows"] == {"count": 0, "rows": []}


def test_domainsum_json_list_gives_rouge_and_rouge_geo(tmp_path):
    from custom_metrics.families.rouge import geometric_mean

    records = [{"id": f"cnndm-{i}", "document": f"Story {i}. " + _text(60), "summary": _text(20 + 5 * i),
                "prediction": _text(15 + 7 * i)} for i in range(4)]
    records.insert(2, {"id": "cnndm-empty", "document": "no output here", "summary": "", "prediction": None})
    path = tmp_path / "cnndm_output.json"
    path.write_text(json.dumps(records, indent=1))
    assert main([str(path), "--task", "domainsum_cnndm", "--metrics", "rouge", "--bootstrap", "200"]) == 0
    scores, summary = _outputs(tmp_path, path)
    assert summary["input_format"] == "json" and summary["benchmark"] == "domainsum"
    assert summary["domain"] == "cnndm" and summary["n_samples"] == 4
    assert summary["skipped_rows"] == {"count": 1, "rows": [{"where": "item [2]", "id": "cnndm-empty",
                                                                "why": "empty row"}]}
    kept = [r for r in records if r["prediction"]]
    batch = registry.Batch(predictions=[r["prediction"] for r in kept], references=[r["summary"] for r in kept],
                           documents=[r["document"] for r in kept])
    want = _rouge_reference(batch, "domainsum", "cnndm", {})
    assert [s["rouge1"] for s in scores] == want["rouge1"]
    means = [sum(s[k] for s in scores) / len(scores) for k in ("rouge1", "rouge2", "rougeL")]
    assert summary["metrics"]["rouge_geo"] == pytest.approx(geometric_mean(means), abs=1e-12)
    low, high = summary["intervals"]["rouge_geo"]
    assert low <= summary["metrics"]["rouge_geo"] <= high and summary["bootstrap"]["resamples"] == 200


def test_jsonl_with_custom_column_names(tmp_path):
    path = tmp_path / "preds.jsonl"
    rows = [{"key": 10 + i, "gen": f"  {_text(12 + i)} ", "gold": _text(15), "src": "source text",
             "summary": "not the reference"} for i in range(3)]
    path.write_text(json.dumps(rows[0]) + "\n\n" + "\n".join(json.dumps(r) for r in rows[1:]) + "\n")
    assert main([str(path), "--metrics", "rouge1", "--prediction-column", "gen", "--reference-column", "gold",
                 "--document-column", "src", "--id-column", "key", "--task", "adapteval_pubmed"]) == 0
    scores, summary = _outputs(tmp_path, path)
    assert summary["columns"] == {"prediction": "gen", "reference": "gold", "document": "src", "id": "key"}
    assert [s["id"] for s in scores] == ["10", "11", "12"]
    assert scores[0]["prediction"] == _text(12)  # stripped as the tasks strip
    assert summary["skipped_rows"] == {"count": 1, "rows": [{"where": "line 2", "id": None,
                                                                "why": "empty row"}]}
    batch = registry.Batch(predictions=[r["gen"].strip() for r in rows], references=[r["gold"] for r in rows],
                           documents=[r["src"] for r in rows])
    want = _rouge_reference(batch, "adapteval", "pubmed", {})
    assert [s["rouge1"] for s in scores] == want["rouge1"]
    assert set(summary["metrics"]) == {"rouge1"} and "filter" not in scores[0]


@pytest.mark.parametrize("name, content, flags, message", [
    ("no_pred.csv", "doc_id,output_text,reference\n0,a,b\n", [],
     "no prediction column (looked for prediction, output, generated; give --prediction-column); "
     "columns: doc_id, output_text, reference"),
    ("flag.csv", "doc_id,prediction,reference\n0,a,b\n", ["--document-column", "body"],
     "no column 'body' (--document-column); columns: doc_id, prediction, reference"),
    ("two.jsonl", json.dumps({"prediction": "a", "summary": "b", "target": "c"}) + "\n", [],
     "columns summary, target could each be the reference"),
    ("number.jsonl", json.dumps({"prediction": "a", "reference": "b"}) + "\n"
     + json.dumps({"prediction": 3, "reference": "b"}) + "\n", [],
     "number.jsonl, line 2, field 'prediction': expected a string, got int"),
    ("broken.jsonl", json.dumps({"prediction": "a", "reference": "b"}) + "\n{\"prediction\": \n", [],
     "broken.jsonl, line 2: invalid JSON"),
    ("notlist.json", json.dumps({"prediction": "a", "reference": "b"}), [],
     "expected a JSON list of records, got a dict"),
    ("wide.csv", "prediction,reference\na,b\nc,d,e\n", [], "wide.csv, row 2 (line 3): 3 fields"),
])
def test_table_errors_name_file_row_and_field(tmp_path, capsys, name, content, flags, message):
    path = tmp_path / name
    path.write_text(content)
    assert main([str(path), "--metrics", "rouge1", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path.parent) in err


def test_invalid_utf8_names_row_and_field(tmp_path, capsys):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"id,prediction,reference,notes\n0,fine,ok,\xff\n1,caf\xe9,ok,x\n")
    assert main([str(path), "--metrics", "rouge1"]) == 2
    # the bad byte in an unread column does no harm; the one in the prediction is named
    assert "latin1.csv, row 2 (line 3), field 'prediction': invalid UTF-8" in capsys.readouterr().err


def test_a_harness_file_is_recognised_by_content(tmp_path):
    samples = tmp_path / "run.jsonl"
    batch = _write_ccs_samples(samples)
    assert main([str(samples), "--task", "ccsbench_compositional", "--metrics", "length_mad"]) == 0
    scores, summary = _outputs(tmp_path, samples)
    assert summary["input_format"] == "harness" and summary["filter"] == "none"
    ctx = registry.Context(benchmark="ccsbench", subset="compositional")
    assert summary["metrics"]["length_mad"] == registry.score_corpus(["ccs_length"], batch, ctx)["length_mad"]


def test_default_metrics_are_the_tasks_catalogue_families(tmp_path, capsys):
    from lm_eval_tasks.catalog import lookup
    from lm_eval_tasks.rescoring.selection import task_selection

    assert task_selection("adapteval_pubmed") == {f: list(registry.family_keys(f))
                                                  for f in lookup("adapteval_pubmed").families}
    path = tmp_path / "length.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prediction": _text(n), "reference": _text(70),
                                        "length_bin": b}) + "\n"
                            for i, (n, b, *_rest) in enumerate(ROWS)))
    assert main([str(path), "--task", "ccsbench_length"]) == 0
    scores, summary = _outputs(tmp_path, path)
    spec = lookup("ccsbench_length")
    assert list(summary["metrics"]) == [k for f in spec.families for k in registry.family_keys(f)]
    assert [s["length_pcc"] for s in scores] == [[0, 0], [1, 1], [2, 2], [1, 2]]
    low, high = summary["intervals"]["length_pcc"]  # a corpus key, recomputed per resample
    assert -1 <= low <= summary["metrics"]["length_pcc"] <= high <= 1
    # no task: no conventions to score with; a benchmark and no --metrics: nothing to choose the metrics from
    assert main([str(path), "--overwrite"]) == 2
    assert "a table of predictions with no --task or --benchmark" in capsys.readouterr().err
    assert main([str(path), "--benchmark", "ccsbench", "--overwrite"]) == 2
    assert "give --metrics, or --task NAME" in capsys.readouterr().err
    assert main([str(path), "--task", "adapteval_nowhere", "--overwrite"]) == 2
    assert "--task: unknown suite task 'adapteval_nowhere'" in capsys.readouterr().err


def test_bootstrap_interval_is_a_numpy_percentile_bootstrap():
    import math
    import warnings

    import numpy as np

    from custom_metrics.analysis.stats import bootstrap

    values = [0.12, 0.55, 0.31, 0.9, 0.47, 0.05, 0.66, 0.38, 0.21, 0.74]
    rng = np.random.default_rng(99)
    direct = np.asarray(values)[rng.integers(0, len(values), size=(3000, len(values)))].mean(axis=1)
    want = tuple(np.percentile(direct, [2.5, 97.5]))
    got = bootstrap.bootstrap_interval(values, "mean", 3000, seed=99, alpha=0.05)
    assert got == pytest.approx(want, abs=1e-15)
    assert got[0] <= float(np.mean(values)) <= got[1]
    # a function of the resampled items sees the same resamples; chunking changes nothing
    assert bootstrap.bootstrap_interval(values, lambda s: sum(s) / len(s), 3000, seed=99) == pytest.approx(got)
    small = bootstrap.CHUNK_CELLS
    try:
        bootstrap.CHUNK_CELLS = 7
        assert bootstrap.bootstrap_interval(values, "mean", 3000, seed=99) == got
    finally:
        bootstrap.CHUNK_CELLS = small
    # nanmean: each resample's mean over its scored documents
    with_nan = values[:5] + [float("nan")] * 3
    rows = np.asarray(with_nan)[np.random.default_rng(5).integers(0, 8, size=(500, 8))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN resample's mean is NaN
        direct = np.nanmean(rows, axis=1)
    want = tuple(np.nanpercentile(direct, [2.5, 97.5]))
    assert bootstrap.bootstrap_interval(with_nan, "nanmean", 500, seed=5) == pytest.approx(want, abs=1e-15)
    assert all(math.isnan(x) for x in bootstrap.bootstrap_interval([], "mean", 100, seed=1))


def test_family_options_and_document_needs_come_from_the_records(tmp_path):
    """What rescore hands a family is what its record declares: the judge asks only the
    chosen ratings and takes the document budget, FM skips the calls of the key not chosen,
    DVO takes the vocabulary file; a family that declares none of these gets none of them."""
    from lm_eval_tasks.rescoring.options import Options
    from lm_eval_tasks.rescoring.selection import family_options, reads_document

    vocab = str(tmp_path / "v.tsv")
    args = Options(vocabulary=vocab, max_document_words=50)
    assert family_options("judge", ["coherence"], args, None, "") == {"judge_metrics": ["coherence"],
                                                                      "max_document_words": 50}
    assert family_options("judge", ["judge_parse_failures"], Options(), None, "")["judge_metrics"] == [
        "domain_adaptation", "coherence", "fluency"]
    assert family_options("fm", ["fm_vanilla"], args, None, "") == {"fm_facets": False, "fm_vanilla": True,
                                                                    "keep_details": True}
    assert family_options("fm", ["fm", "fm_vanilla"], args, None, "")["fm_facets"] is True
    assert family_options("dvo", ["dvo"], args, None, "") == {"vocabulary_file": vocab}
    assert family_options("dvo", ["dvo"], Options(), None, "") == {}
    assert family_options("rouge", ["rouge1"], args, None, "") == {}
    chosen = {"rouge": ["rouge1"], "judge": ["coherence"], "blanc_help": ["blanc_help"], "fm": ["fm"]}
    assert reads_document(chosen) == ["coherence", "blanc_help"]
    assert [f.name for f in registry.all_families() if "document" in f.needs] == ["blanc_help", "blanc_tune",
                                                                                   "judge"]
