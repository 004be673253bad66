"""``meta-eval --compute rouge`` stems as the ``rouge_stemming`` setting says, else as the
named benchmark's release does, else as the library default, and records which."""

from __future__ import annotations

import pandas as pd
import pytest

from custom_metrics.analysis import meta_eval
from custom_metrics.families.rouge import rouge_per_document


def _table():
    return pd.DataFrame({"doc_id": ["a", "b"], "system": ["s", "s"],
                         "reference": ["the runners were running", "cells divided quickly"],
                         "summary": ["a runner runs", "the cell divides"]})


@pytest.mark.parametrize("setting,benchmark,stem,source", [
    (False, None, False, "setting"),
    (True, "domainsum", True, "setting"),
    (None, "domainsum", False, "release convention of domainsum"),
    (None, "medqsum", True, "release convention of medqsum"),
    (None, None, True, "library default"),
])
def test_compute_rouge_follows_the_setting_then_the_benchmark(setting, benchmark, stem, source):
    from lm_eval_tasks.scoring_context import conventions

    df = _table()
    info = meta_eval.compute_metrics(df, ["rouge"], rouge_stemming=setting,
                                     rouge_convention=conventions(benchmark or "").get("rouge_stemming"))
    assert info["rouge_stemming"] is stem and info["rouge_stemming_source"] == source
    want = [d["rougeL"] for d in rouge_per_document(list(df["summary"]), list(df["reference"]), use_stemmer=stem)]
    assert list(df["our_rougeL"]) == pytest.approx(want)


def test_stemming_changes_the_scores_and_is_in_the_summary(tmp_path):
    df = _table().assign(human=[1.0, 2.0])
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    off = meta_eval.run(path, tmp_path / "off", compute=["rouge"], n_boot=0, rouge_stemming=False)
    on = meta_eval.run(path, tmp_path / "on", compute=["rouge"], n_boot=0, rouge_stemming=True)
    assert off["compute"]["rouge_stemming"] is False and on["compute"]["rouge_stemming"] is True
    assert '"rouge_stemming": false' in (tmp_path / "off" / "summary.json").read_text()


def test_bad_stemming_setting_is_a_meta_eval_error():
    with pytest.raises(meta_eval.MetaEvalError, match="rouge_stemming"):
        meta_eval.compute_metrics(_table(), ["rouge"], rouge_stemming="yes")


def test_command_passes_the_setting_and_the_benchmark(tmp_path, capsys):
    import json

    from lm_eval_tasks.commands import meta_eval as command

    path = tmp_path / "t.csv"
    _table().assign(human=[1.0, 2.0]).to_csv(path, index=False)
    assert command.main([str(path), "--out", str(tmp_path / "a"), "--compute", "rouge", "--bootstrap", "0",
                         "--no-progress", "--benchmark", "domainsum"]) == 0
    got = json.loads((tmp_path / "a" / "summary.json").read_text())["compute"]
    assert got == {"rouge_stemming": False, "rouge_stemming_source": "release convention of domainsum"}
    assert command.main([str(path), "--out", str(tmp_path / "b"), "--compute", "rouge", "--bootstrap", "0",
                         "--no-progress", "--benchmark", "domainsum", "--metadata", '{"rouge_stemming": true}']) == 0
    got = json.loads((tmp_path / "b" / "summary.json").read_text())["compute"]
    assert got == {"rouge_stemming": True, "rouge_stemming_source": "setting"}
