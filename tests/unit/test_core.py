"""The evaluation core without the harness CLI: catalogue, settings, registry, task class."""

from __future__ import annotations

import math
import re

import pytest

from conftest import ROOT
from custom_metrics import registry
from custom_metrics.families import judge_metrics
from lm_eval_tasks import catalog, settings


def test_catalogue_holds_every_task_name_of_the_suite():
    """Counts follow from the declared subsets, so adding a domain edits no test."""
    tasks = catalog.all_tasks()
    domains = [d for level in catalog.DOMAINSUM_LEVELS.values() for d in level]
    assert len(catalog.select("domainsum")) == 2 * len(domains)  # zero- and two-shot of each
    for bench, subsets in (("domainsum", domains), ("adapteval", catalog.ADAPTEVAL_DOMAINS),
                           ("ccsbench", catalog.CCSBENCH_SUBSETS), ("medqsum", catalog.MEDQSUM_SUBSETS)):
        for subset in subsets:  # every declared subset has its plain zero-shot task
            assert catalog.select(bench, shots=0, variant="", subsets=(subset,)), (bench, subset)
    assert len(tasks) == sum(len(catalog.select(b)) for b in catalog.BENCHMARKS)
    for name, spec in tasks.items():  # one naming rule
        assert name == catalog.task_name(spec.benchmark, spec.subset, spec.shots, spec.variant)
    spec = catalog.lookup("adapteval_arxiv_fm")
    assert (spec.benchmark, spec.subset, spec.shots, spec.variant) == ("adapteval", "arxiv", 0, "fm")
    assert catalog.zero_shot(spec).name == "adapteval_arxiv"
    spec = catalog.lookup("domainsum_wapo_2shot")
    assert (spec.level, spec.shots, catalog.zero_shot(spec).name) == ("style", 2, "domainsum_wapo")
    assert catalog.lookup("ccsbench_focus_3shot").shots == 3
    assert catalog.lookup("ccsbench_compositional_hard").families == (
        "rouge", "ccs_length", "ccs_keywords", "ccs_readability", "ccs_focus")


def test_unknown_and_group_names_give_clear_errors():
    with pytest.raises(catalog.UnknownTask, match="did you mean domainsum_cnndm"):
        catalog.lookup("domainsum_cnndn")
    with pytest.raises(catalog.UnknownTask, match="is a group of the suite"):
        catalog.lookup("domainsum_genre")
    assert catalog.expand(["domainsum_genre", "domainsum_cnndm"]) == [
        f"domainsum_{d}" for d in catalog.DOMAINSUM_LEVELS["genre"]]


def test_no_group_averages_settings_together():
    for group in catalog.all_groups().values():
        if not group.metrics:
            continue
        shots = {catalog.lookup(t).shots for t in catalog.expand([group.name])}
        variants = {catalog.lookup(t).variant for t in catalog.expand([group.name])}
        assert len(shots) == 1 and len(variants) == 1, group.name
    assert catalog.all_groups()["domainsum"].metrics == ()


def test_few_shot_leaves_report_their_shots():
    text = (catalog.TASKS_DIR / "ccsbench" / "ccsbench_focus_3shot.yaml").read_text()
    assert "num_fewshot: 3\n" in text
    assert "num_fewshot" not in (catalog.TASKS_DIR / "domainsum" / "domainsum_cnn.yaml").read_text()


def test_docs_settings_table_is_generated_from_the_table():
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert settings.markdown_table() in page, (
        "docs/settings.md's table is stale: run python -m lm_eval_tasks.reference --write")


def test_precedence_metadata_environment_default(monkeypatch):
    monkeypatch.delenv("DOMSUM_BERTSCORE_LAYERS", raising=False)
    assert settings.resolve({}, "bertscore_layers") is None
    assert settings.resolve({}, "bertscore_batch_size") == 64
    monkeypatch.setenv("DOMSUM_BERTSCORE_LAYERS", "7")
    assert settings.resolve({}, "bertscore_layers") == 7
    assert settings.source_of({}, "bertscore_layers") == "environment"
    assert settings.resolve({"bertscore_layers": "3"}, "bertscore_layers") == 3
    assert settings.source_of({"bertscore_layers": 3}, "bertscore_layers") == "metadata"
    monkeypatch.setenv("DOMSUM_BERTSCORE_LAYERS", "seven")
    with pytest.raises(settings.SettingError, match=r"bertscore_layers.*\$DOMSUM_BERTSCORE_LAYERS"):
        settings.resolve({}, "bertscore_layers")
    with pytest.raises(KeyError, match="unknown setting"):
        settings.resolve({}, "bertscore_layer")


def test_api_key_never_comes_from_metadata(monkeypatch):
    monkeypatch.delenv("DOMSUM_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = settings.judge_config({"judge_model": "m", "judge_api_key": "leaked", "judge_concurrency": "3"})
    assert cfg.api_key is None and cfg.concurrency == 3
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert settings.judge_config({"judge_model": "m"}).api_key == "sk-env"
    assert settings.judge_config({}) is None


def test_every_catalogue_family_is_registered_with_consistent_keys():
    seen: dict[str, str] = {}
    for spec in catalog.all_tasks().values():
        for name in spec.families:
            fam = registry.get(name)
            for key in fam.keys:
                assert seen.setdefault(key.name, fam.name) == fam.name or key.name.startswith(("rouge", "bertscore"))
    assert registry.higher_is_better(["length_mad", "rouge1", "judge_parse_failures", "fkgl_normal"]) == {
        "length_mad": False, "rouge1": True, "judge_parse_failures": False, "fkgl_normal": None}
    assert [registry.key(k).better for k in ("rouge1", "length_mad", "fkgl_normal")] == ["higher", "lower", "neither"]
    with pytest.raises(ValueError, match="higher_is_better must be True, False or None"):
        registry.Key("x", higher_is_better="lower")


def test_rouge_family_per_document_values_reproduce_the_corpus_numbers():
    from custom_metrics.families.rouge import rouge_scores

    preds = ["the cat sat on the mat", "a dog barked loudly", ""]
    refs = ["the cat is on the mat", "the dog barked", "nothing here"]
    batch = registry.Batch(preds, refs, ["", "", ""], [{}, {}, {}])
    corpus = registry.score_corpus(["rouge"], batch, registry.Context())
    expected = rouge_scores(preds, refs)
    for k, v in expected.items():
        assert corpus[k] == pytest.approx(v, abs=1e-12), k
    # hand case: ROUGE-1 of doc 2: overlap {dog, barked} = 2; P = 2/4, R = 2/3, F = 4/7
    per = registry.get("rouge").score(batch, registry.Context())
    assert per["rouge1"][1] == pytest.approx(4 / 7)
    assert per["rouge_geo"][1] == pytest.approx([4 / 7, per["rouge2"][1], per["rougeL"][1]])


def test_ccs_families_per_document_aggregate_to_the_metric_functions():
    from custom_metrics.families import ccs

    preds = ["word " * 40, "word " * 120, "Deep nets for fish counting with sonar arrays."]
    extras = [{"length_bin": 0, "keywords": ["word"], "readability": "normal", "focus": "high"},
              {"length_bin": 1, "keywords": [], "readability": "high", "focus": "low"},
              {"length_bin": 0, "keywords": ["fish counting", "sonar"], "readability": "high", "focus": "high"}]
    batch = registry.Batch(preds, [""] * 3, [""] * 3, extras)
    got = registry.score_corpus(["ccs_length", "ccs_keywords", "ccs_readability"], batch, registry.Context())
    want = {**ccs.length_scores(preds, [0, 1, 0]),
            "keyword_sr": ccs.keyword_success_rate(preds, [["word"], [], ["fish counting", "sonar"]]),
            **ccs.readability_scores(preds, ["normal", "high", "high"])}
    for k in ("length_pcc", "length_mad", "keyword_sr", "fkgl_normal", "fkgl_high", "delta_fkgl"):
        assert got[k] == pytest.approx(want[k], nan_ok=True), k
    assert got["keyword_sr"] == pytest.approx((1.0 + 1.0) / 2)


def test_bertscore_family_needs_a_loadable_encoder():
    ctx = registry.Context(settings={"bertscore_model": str(ROOT / "no-such-encoder")})
    with pytest.raises(registry.ScorerUnavailable, match="bertscore_model.*DOMSUM_BERTSCORE_MODEL"):
        registry.get("bertscore").check(ctx)


def test_judge_endpoint_check_refuses_a_dead_port():
    import socket

    from custom_metrics.judge import JudgeConfig

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = JudgeConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", cache=None)
    with pytest.raises(registry.ScorerUnavailable, match=r"judge_base_url.*OPENAI_BASE_URL"):
        judge_metrics.check_endpoint(cfg, timeout_s=2)


def _task(name: str, **meta):
    from lm_eval_tasks.harness import SuiteTask

    cfg = {"task": name, "output_type": "generate_until", "test_split": "test",
           "doc_to_text": "{{prompt}}", "doc_to_target": "{{summary}}",
           "num_fewshot": catalog.lookup(name).shots or None, "metadata": dict(meta)}
    return SuiteTask(config=cfg)


def test_task_class_loads_in_download_and_reports_what_it_found(fixture_data_dir):
    task = _task("ccsbench_length_3shot", data_dir=str(fixture_data_dir))
    docs = list(task.test_docs())
    assert docs and all(d["prompt"] for d in docs)
    record = task.run_record()
    assert record["skipped_rows"] == {"test": 0, "train": 0}
    assert record["fewshot_seed_used"] == 1234 and record["suite_task"]["shots"] == 3
    from lm_eval.api.metrics import mean

    assert task.aggregation()["length_mad"] is mean  # closed-form stderr; NaN documents left out
    assert task.higher_is_better()["length_mad"] is False


def test_a_key_with_no_better_direction_reaches_lm_eval_as_none(fixture_data_dir):
    """FKGL of normal-readability requests has no better direction: the task hands lm-eval None,
    which lm-eval itself uses for a group whose members disagree, and its table draws no arrow."""
    from lm_eval.utils import make_table

    hib = _task("ccsbench_readability", data_dir=str(fixture_data_dir)).higher_is_better()
    assert (hib["fkgl_normal"], hib["fkgl_high"], hib["delta_fkgl"]) == (None, False, True)
    results = {"results": {"t": {"alias": "t", "fkgl_normal,none": 14.0, "fkgl_high,none": 11.0}},
               "higher_is_better": {"t": hib}, "n-shot": {"t": 0}, "versions": {"t": 3.0}}
    rows = {line.split("|")[5].strip(): line.split("|")[6].strip() for line in make_table(results).splitlines()[2:]}
    assert rows == {"fkgl_normal": "", "fkgl_high": "↓"}


def test_num_fewshot_other_than_the_prompts_is_an_error(fixture_data_dir):
    task = _task("domainsum_cnn", data_dir=str(fixture_data_dir))
    task.set_config("num_fewshot", 0)
    with pytest.raises(ValueError, match=r"domainsum_cnn_2shot instead"):
        task.set_config("num_fewshot", 2)
    with pytest.raises(ValueError, match=r"holds 2 demonstrations"):
        _task("domainsum_cnn_2shot", data_dir=str(fixture_data_dir)).set_config("num_fewshot", 5)


def test_task_scores_a_shard_once_and_fails_soft(fixture_data_dir):
    from lm_eval.api.instance import Instance

    task = _task("domainsum_cnn", data_dir=str(fixture_data_dir), bertscore_model=str(ROOT / "missing"))
    docs = list(task.test_docs())[:2]
    insts = []
    for i, d in enumerate(docs):
        inst = Instance("generate_until", d, (d["prompt"], {}), idx=0, metadata=("domainsum_cnn", i, 1))
        inst.filtered_resps = {"none": d["summary"]}
        insts.append(inst)
    task._instances = insts
    first = task.process_results(docs[0], [docs[0]["summary"]])
    assert len(task._scoring.scores) == 2  # the whole shard was scored by the first call
    out = [first, task.process_results(docs[1], [docs[1]["summary"]])]
    assert all(o["rouge1"] == pytest.approx(1.0) for o in out)
    assert all(math.isnan(o["bertscore_f1"]) for o in out)  # encoder missing: NaN, not a crash
    assert re.search(r"bertscore", str(task.run_record()["scorer_failures"]))


def _mirror(tmp_path, lines: list[bytes], split: str = "test"):
    folder = tmp_path / "domainsum" / "cnn"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{split}.jsonl").write_bytes(b"".join(lines))
    return tmp_path


def test_empty_split_file_is_an_error_naming_the_file(tmp_path):
    from lm_eval_tasks.catalog import load_task
    from lm_eval_tasks.data.loader import DataError

    root = _mirror(tmp_path, [b"\n", b"  \n"])
    with pytest.raises(DataError, match=r"domainsum_cnn.*cnn/test\.jsonl holds no records"):
        load_task("domainsum_cnn", metadata={"data_dir": str(root)})


def test_invalid_utf8_names_file_and_line(tmp_path):
    from lm_eval_tasks.catalog import load_task
    from lm_eval_tasks.data.loader import DataError

    good = b'{"document": "A text.", "summary": "A."}\n'
    root = _mirror(tmp_path, [good, b'{"document": "caf\xe9", "summary": "x"}\n'])
    with pytest.raises(DataError, match=r"cnn/test\.jsonl, line 2: not valid UTF-8"):
        load_task("domainsum_cnn", metadata={"data_dir": str(root)})


def test_empty_documents_and_references_are_counted_skips(tmp_path, caplog):
    from lm_eval_tasks.catalog import load_task

    rows = [b'{"id": "a", "document": "A real text.", "summary": "Real."}\n',
            b'{"id": "b", "document": "   ", "summary": "No source."}\n',
            b'{"id": "c", "document": "Text.", "summary": ""}\n']
    root = _mirror(tmp_path, rows)
    loaded = load_task("domainsum_cnn", metadata={"data_dir": str(root)})
    assert [d["id"] for d in loaded.docs] == ["a"]
    assert loaded.report["skipped_empty"] == {"split": "test", "count": 2, "ids": ["b", "c"]}
    assert "2 test record(s) with an empty document or reference summary left out: b, c" in caplog.text


def test_api_models_without_a_tokenizer_are_fitted_by_a_stated_bound():
    import json as _json

    from lm_eval_tasks.benchmarks.budget import document_span, fit_prompt, meter_from_metadata

    meter = meter_from_metadata({"model": "served", "base_url": "http://127.0.0.1:1/v1", "max_length": 300}, 60,
                                chars_per_token=3.0)
    assert meter.limit == 240 and "characters-per-token bound 3" in meter.source
    document = "word " * 400
    prompt = "Summarize the following text:\n\n" + document.strip() + "\n\nSUMMARY:"
    assert document_span(prompt, document.strip()) == (len("Summarize the following text:\n\n"),
                                                       len("Summarize the following text:\n\n") + 1999)

    def render(p: str) -> str:  # what local-chat-completions builds
        return _json.dumps([{"role": "user", "content": p}])

    fitted = fit_prompt("t", render, prompt, document.strip(), meter)
    content = _json.loads(fitted.context)[0]["content"]
    assert content.startswith("Summarize the following text:") and content.endswith("SUMMARY:")
    assert meter.count(fitted.context) <= 240 and len(content) / 3 + 16 <= 240


def test_rouge_counts_references_without_latin_tokens(caplog):
    batch = registry.Batch(["a summary", "another one"], ["新闻摘要在这里", "a summary of news"], ["", ""], [{}, {}])
    ctx = registry.Context()
    per = registry.get("rouge").score(batch, ctx)
    assert per["rouge1"][0] == 0.0
    assert ctx.record["rouge_references_without_tokens"] == {"count": 1, "references": 2, "share": 0.5}
    assert "1 of 2 references have no [a-z0-9] token" in caplog.text


def test_nanmean_keys_leave_out_documents_they_do_not_apply_to(fixture_data_dir):
    from lm_eval.api.instance import Instance

    task = _task("ccsbench_readability", data_dir=str(fixture_data_dir))
    docs = list(task.test_docs())
    insts = []
    for i, d in enumerate(docs):
        inst = Instance("generate_until", d, (d["prompt"], {}), idx=0, metadata=("ccsbench_readability", i, 1))
        inst.filtered_resps = {"none": d["summary"]}
        insts.append(inst)
    task._instances = insts
    out = [task.process_results(d, [d["summary"]]) for d in docs]
    levels = [d["readability"] for d in docs]
    assert {"normal", "high"} <= set(levels)
    for level, row in zip(levels, out):
        assert ("fkgl_normal" in row) == (level == "normal") and ("fkgl_high" in row) == (level == "high")
        assert "delta_fkgl" in row and "rouge1" in row
