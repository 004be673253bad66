"""NLTK's tokenizer data found offline, in a fresh interpreter with no download, and a user's
own punkt data found first.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, subprocess_env
from custom_metrics import tokenize as T


OFFLINE_SCRIPT = textwrap.dedent("""
    import json, socket, sys

    def refuse(*args, **kwargs):
        raise AssertionError("network or download attempted")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    first = sys.argv[1]
    if first == "nltk":
        import nltk
        nltk.download = refuse
        nltk.downloader.Downloader.download = refuse
        import custom_metrics
    else:
        import custom_metrics
        assert "nltk" not in sys.modules, "importing custom_metrics must not import NLTK"
        import nltk
        nltk.download = refuse
        nltk.downloader.Downloader.download = refuse
    from custom_metrics.tokenize import tokenizer_info, word_tokenize
    print(json.dumps({"nltk": nltk.word_tokenize("Mr. Smith's U.S. trip. It ended."),
                      "ours": word_tokenize("Mr. Smith's U.S. trip. It ended."),
                      "info": tokenizer_info(), "path": nltk.data.path}))
""")


@pytest.mark.parametrize("first", ["nltk", "custom_metrics"])
def test_offline_without_any_download(first, tmp_path):
    empty = tmp_path / "empty_nltk_data"
    empty.mkdir()
    env = subprocess_env(NLTK_DATA=str(empty), HOME=str(tmp_path), HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", OFFLINE_SCRIPT, first], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = ["Mr.", "Smith", "'s", "U.S.", "trip", ".", "It", "ended", "."]
    assert out["nltk"] == expected
    assert out["ours"] == [t.lower() for t in expected]
    assert out["info"]["punkt_source"] == "bundled"
    assert out["path"][0] == str(empty)  # the user's folders keep precedence
    assert out["path"][-1] == str(T.NLTK_DATA_DIR)


def test_users_own_punkt_data_is_found_first(tmp_path):
    import shutil

    user = tmp_path / "nltk_data"
    shutil.copytree(T.NLTK_DATA_DIR / "tokenizers", user / "tokenizers")
    env = subprocess_env(NLTK_DATA=str(user), HOME=str(tmp_path))
    code = ("import json, custom_metrics.tokenize as T; "
            "print(json.dumps(T.tokenizer_info()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert info["punkt_source"] == "user nltk_data"
    assert info["punkt_path"].startswith(str(user))
