"""Scoring shows progress on stderr, and only there, and only when asked.

Why these tests: a harness run or ``domsum rescore`` scores thousands of documents per
family; a bar shows that work is under way. Stdout carries the commands' tables and
JSON, so a bar there would corrupt them; ``--no-progress`` and ``DOMSUM_PROGRESS=0``
must silence every bar. Real scoring throughout (ROUGE, DVO, a re-scored file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from custom_metrics import progress, registry
from custom_metrics.progress import ENV
from lm_eval_tasks import settings
from lm_eval_tasks.commands.rescore import main as rescore

PREDICTIONS = ["The inhibitor reduced tumour growth in mice.", "Patients got two doses of vaccine.",
               "Blood pressure fell after treatment."]
REFERENCES = ["A kinase inhibitor reduced tumour growth.", "Two vaccine doses were given.",
              "Treatment lowered blood pressure."]
BAR = "%|"  # tqdm's percentage next to the bar


def _batch(n: int = 3) -> registry.Batch:
    return registry.Batch(predictions=PREDICTIONS[:n], references=REFERENCES[:n], documents=[""] * n,
                          extras=[{} for _ in range(n)])


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


def test_rouge_scoring_draws_its_bar_on_stderr(capsys):
    scores = registry.score_corpus(["rouge"], _batch(), registry.Context(benchmark="adapteval", subset="pubmed",
                                                                         progress=True))
    out, err = capsys.readouterr()
    assert out == ""
    assert "ROUGE pubmed" in err and "3/3" in err and BAR in err
    assert 0 < scores["rouge1"] < 1


def test_rouge_scoring_with_progress_off_writes_nothing(capsys):
    on = registry.score_corpus(["rouge"], _batch(), registry.Context(benchmark="adapteval", progress=True))
    capsys.readouterr()
    off = registry.score_corpus(["rouge"], _batch(), registry.Context(benchmark="adapteval", progress=False))
    assert capsys.readouterr() == ("", "")
    assert off == on  # the bar changes nothing about the numbers


def test_dvo_scoring_draws_a_bar_and_the_environment_turns_it_off(tmp_path, monkeypatch, capsys):
    vocab = tmp_path / "pubmed.txt"
    vocab.write_text("\n".join(["tumour", "growth", "vaccine", "doses", "blood", "pressure"]) + "\n")
    ctx = registry.Context(benchmark="adapteval", subset="pubmed", options={"vocabulary_file": str(vocab)})
    scored = registry.get("dvo").score(_batch(2), ctx)  # progress None: the environment decides, default on
    err = capsys.readouterr().err
    assert "DVO pubmed" in err and "2/2" in err
    monkeypatch.setenv(ENV, "0")
    assert registry.get("dvo").score(_batch(2), ctx) == scored
    assert capsys.readouterr() == ("", "")


def test_nothing_to_score_draws_nothing(capsys):
    registry.score_corpus(["rouge"], _batch(0), registry.Context(progress=True))
    assert list(progress.track([], "empty", enabled=True)) == []
    with progress.bar(0, "empty", enabled=True) as b:
        b.update(0)
    assert capsys.readouterr() == ("", "")


def test_the_progress_setting_reads_metadata_then_the_environment(monkeypatch):
    assert settings.resolve({}, "progress") is True and progress.is_enabled() is True
    monkeypatch.setenv(ENV, "off")
    assert settings.resolve({}, "progress") is False and progress.is_enabled() is False
    assert settings.resolve({"progress": True}, "progress") is True
    assert progress.is_enabled(True) is True
    assert settings.SETTINGS["progress"].env == ENV


def test_judge_configuration_takes_the_progress_setting(monkeypatch):
    assert settings.judge_config({"judge_model": "m"}).progress is None  # the helper decides: on
    assert settings.judge_config({"judge_model": "m", "progress": False}).progress is False
    monkeypatch.setenv(ENV, "0")
    assert settings.judge_config({"judge_model": "m"}).progress is False


def _samples(path: Path) -> Path:
    rows = [{"doc_id": i, "doc": {"id": f"adapteval/pubmed/test/{i}", "document": "", "summary": ref},
             "target": ref, "resps": [[pred]], "filtered_resps": [pred], "filter": "none"}
            for i, (pred, ref) in enumerate(zip(PREDICTIONS, REFERENCES))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rescore_bars_go_to_stderr_and_no_progress_silences_them(tmp_path, capsys):
    samples = _samples(tmp_path / "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl")
    args = [str(samples), "--metrics", "rouge", "--bootstrap", "0", "--out", str(tmp_path / "o")]
    assert rescore(args) == 0
    out, err = capsys.readouterr()
    assert "ROUGE pubmed" in err and "3/3" in err and BAR in err
    assert BAR not in out and "\r" not in out and "rouge1=" in out
    first = json.loads((tmp_path / "o" / f"{samples.stem}.summary.json").read_text())["metrics"]
    assert rescore([*args, "--no-progress", "--overwrite"]) == 0
    out, err = capsys.readouterr()
    assert "ROUGE" not in err and BAR not in err and "rouge1=" in out
    assert json.loads((tmp_path / "o" / f"{samples.stem}.summary.json").read_text())["metrics"] == first


def test_prepare_data_turns_the_hub_bars_off_and_back_on():
    import datasets
    from huggingface_hub.utils import are_progress_bars_disabled

    from lm_eval_tasks.preparation.mirror import hub_bars

    before = (datasets.is_progress_bar_enabled(), are_progress_bars_disabled())
    with hub_bars(False):
        assert not datasets.is_progress_bar_enabled() and are_progress_bars_disabled()
    assert (datasets.is_progress_bar_enabled(), are_progress_bars_disabled()) == before
    with hub_bars(True):
        assert (datasets.is_progress_bar_enabled(), are_progress_bars_disabled()) == before
