"""The reference cache's weights identity, without an encoder."""

from __future__ import annotations

import os

import pytest
from helpers.reference_cache import rc


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(rc, "_WARNED", set())
    monkeypatch.delenv(rc.CACHE_ENV, raising=False)


def test_weights_identity_follows_size_and_mtime(tmp_path):
    model = tmp_path / "enc"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"x" * 10)
    before = rc.weights_identity(str(model))
    os.utime(model / "model.safetensors", ns=(1, 1))
    touched = rc.weights_identity(str(model))
    (model / "model.safetensors").write_bytes(b"y" * 11)
    rewritten = rc.weights_identity(str(model))
    assert before != touched != rewritten
    assert rc.weights_identity(str(tmp_path / "missing")) is None
