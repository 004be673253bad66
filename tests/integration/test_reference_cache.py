"""The on-disk cache of BERTScore reference embeddings (real MiniLM encoder).

What must hold: the numbers with the cache equal the numbers without it (cold and
warm, to 1e-6; in practice bit for bit), a second system pays only for its candidates,
the key changes with anything that changes the embeddings, writes are atomic, and a
damaged or unwritable cache never fails scoring.
"""

from __future__ import annotations

import logging
import os
from importlib import import_module

import pytest
from helpers.reference_cache import rc


bs = import_module("custom_metrics.families.bertscore")  # the module (the package re-exports the function)
model_cache = import_module("custom_metrics.model_cache")

REFS = [
    "Officials approved the new budget on Monday after a long debate in the city council.",
    "The team won the match with a late goal while fans celebrated outside the stadium.",
    "Researchers found that the treatment improved outcomes for patients in the trial.",
    "Company shares fell sharply after the quarterly report missed expectations.",
    "Officials approved the new budget on Monday after a long debate in the city council.",  # repeated
]
SYSTEM_A = [
    "The council passed the budget on Monday.",
    "A late goal won the match and fans cheered.",
    "The trial showed the treatment helped patients.",
    "Shares dropped after a weak quarterly report.",
    "Budget approved by officials after debate.",
]
SYSTEM_B = [
    "On Monday the city council approved a new budget.",
    "Fans celebrated a late winning goal.",
    "Patients did better with the new treatment, researchers said.",
    "",  # empty prediction: (0, 0, 0), its reference still scored for the others
    "Officials debated, then approved the budget.",
]
TOL = 1e-6


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(rc, "_WARNED", set())
    monkeypatch.delenv(rc.CACHE_ENV, raising=False)


def _score(preds, refs, model, cache_dir, report=None, layers=6):
    return bs.bertscore_per_document(preds, refs, model=model, num_layers=layers, batch_size=2,
                                     report=report, cache_dir=cache_dir)


def _close(a, b, tol=TOL):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert abs(u - v) <= tol, (x, y)


def _entries(root):
    return sorted(p for p in root.rglob("*.emb"))


def test_cold_and_warm_equal_uncached_and_second_system_reads_references(minilm_path, tmp_path):
    uncached_a = _score(SYSTEM_A, REFS, minilm_path, "off")
    uncached_b = _score(SYSTEM_B, REFS, minilm_path, "off")
    assert not any(tmp_path.iterdir())

    cold = {}
    _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path, cold), uncached_a)
    assert cold["reference_cache_hits"] == 0 and cold["reference_cache_stored"] == 4  # distinct references
    assert len(_entries(tmp_path)) == 4

    warm = {}
    _close(_score(SYSTEM_B, REFS, minilm_path, tmp_path, warm), uncached_b)
    # 3: the reference beside system B's empty prediction is not needed (that pair scores 0)
    assert warm["reference_cache_hits"] == 3 and warm["reference_cache_stored"] == 0
    again = {}
    _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path, again), uncached_a)
    assert again["reference_cache_hits"] == 4


def test_warm_scores_are_bit_identical_and_agree_with_bert_score(minilm_path, tmp_path):
    from bert_score import BERTScorer

    cold = _score(SYSTEM_A, REFS, minilm_path, tmp_path)
    warm = _score(SYSTEM_A, REFS, minilm_path, tmp_path)
    assert warm == cold
    P, R, F = BERTScorer(model_type=minilm_path, num_layers=6, lang="en").score(SYSTEM_A, REFS)
    _close(warm, [(float(p), float(r), float(f)) for p, r, f in zip(P, R, F)], tol=1e-5)


def test_the_encoder_process_cache_is_not_what_answers(minilm_path, tmp_path):
    """A new process (encoder loaded again) still finds the references on disk."""
    _score(SYSTEM_A, REFS, minilm_path, tmp_path)
    model_cache.release()
    report = {}
    _close(_score(SYSTEM_B, REFS, minilm_path, tmp_path, report), _score(SYSTEM_B, REFS, minilm_path, "off"))
    assert report["reference_cache_hits"] == 3 and report["reference_cache_stored"] == 0


def test_key_depends_on_layer_weights_and_versions(minilm_path, tmp_path):
    _score(SYSTEM_A, REFS, minilm_path, tmp_path, layers=6)
    _score(SYSTEM_A, REFS, minilm_path, tmp_path, layers=5)
    folders = sorted(p.name for p in (tmp_path / f"bertscore-v{rc.CACHE_FORMAT}").iterdir())
    assert len(folders) == 2
    ident = bs.get_scorer(minilm_path, 6).identity()
    assert ident["layers"] == 6 and ident["max_length"] == "512" and ident["device"] in ("cpu", "cuda")
    names = {f[0] for f in ident["weights"]["files"]}
    assert {"config.json", "model.safetensors", "vocab.txt"} <= names
    key = rc.ReferenceCache(tmp_path, ident, 384).key
    for change in ({"layers": 5}, {"max_length": "256"}, {"device": "other"},
                   {"versions": {**ident["versions"], "torch": "0"}}):
        assert rc.ReferenceCache(tmp_path, {**ident, **change}, 384).key != key


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty", "unreadable"])
def test_damaged_entry_is_recomputed_with_one_warning(minilm_path, tmp_path, caplog, damage):
    expected = _score(SYSTEM_A, REFS, minilm_path, "off")
    _score(SYSTEM_A, REFS, minilm_path, tmp_path)
    victims = _entries(tmp_path)[:2]
    for victim in victims:
        data = victim.read_bytes()
        if damage == "garbage":
            victim.write_bytes(b"not an entry at all")
        elif damage == "truncated":
            victim.write_bytes(data[: len(data) // 2])
        elif damage == "flipped":
            victim.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
        elif damage == "empty":
            victim.write_bytes(b"")
        else:
            victim.unlink()
            victim.mkdir()  # opening a folder as a file fails with an OSError
    report = {}
    with caplog.at_level(logging.WARNING, logger=bs.__name__):
        _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path, report), expected)
    assert report["reference_cache_hits"] == 2
    said = "cannot read" if damage == "unreadable" else "is damaged"
    assert len([r for r in caplog.records if said in r.getMessage()]) == 1  # once, for two entries
    if damage != "unreadable":  # recomputed entries replace the damaged ones
        assert report["reference_cache_stored"] == 2
        again = {}
        _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path, again), expected)
        assert again["reference_cache_hits"] == 4


def test_unwritable_cache_never_fails_scoring(minilm_path, tmp_path, caplog):
    expected = _score(SYSTEM_A, REFS, minilm_path, "off")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    report = {}
    with caplog.at_level(logging.WARNING, logger=bs.__name__):
        _close(_score(SYSTEM_A, REFS, minilm_path, blocker, report), expected)
        _close(_score(SYSTEM_B, REFS, minilm_path, blocker), _score(SYSTEM_B, REFS, minilm_path, "off"))
    assert report["reference_cache_stored"] == 0
    assert len([r for r in caplog.records if "cannot write" in r.getMessage()]) == 1


def test_a_failed_write_leaves_no_entry_and_no_temporary_file(minilm_path, tmp_path, monkeypatch):
    expected = _score(SYSTEM_A, REFS, minilm_path, "off")

    def killed(src, dst):
        raise OSError("killed before the rename")

    monkeypatch.setattr(rc.os, "replace", killed)
    _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path), expected)
    monkeypatch.undo()
    assert _entries(tmp_path) == []
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    report = {}
    _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path, report), expected)
    assert report["reference_cache_stored"] == 4
    assert [p.name for p in tmp_path.rglob(".tmp-*")] == []


def test_truncation_count_is_the_same_cold_and_warm(minilm_path, tmp_path):
    long_ref = " ".join(["word"] * 700)
    counts = []
    for _ in range(2):
        report = {}
        _score(["a summary", "short one"], [long_ref, "a reference"], minilm_path, tmp_path, report)
        counts.append(report["truncated_inputs"])
    assert counts == [1, 1]


def test_cache_folder_setting_environment_and_off(minilm_path, tmp_path, monkeypatch):
    assert rc.resolve_cache_dir(None) == rc.resolve_cache_dir("") == \
        rc.resolve_cache_dir(rc.DEFAULT_CACHE_DIR)
    assert str(rc.resolve_cache_dir(None)).endswith(os.path.join(".cache", "domsum", "scores"))
    for off in ("off", "OFF", "none", "false", "0", False):
        assert rc.resolve_cache_dir(off) is None
    monkeypatch.setenv(rc.CACHE_ENV, str(tmp_path / "env"))
    assert rc.resolve_cache_dir(None) == tmp_path / "env"
    _score(SYSTEM_A, REFS, minilm_path, None)
    assert len(_entries(tmp_path / "env")) == 4
    monkeypatch.setenv(rc.CACHE_ENV, "off")
    assert rc.resolve_cache_dir(None) is None
    assert rc.resolve_cache_dir(tmp_path / "given") == tmp_path / "given"  # an explicit folder wins


def test_settings_row_and_registry_wiring(minilm_path, tmp_path):
    from custom_metrics import registry
    from lm_eval_tasks import settings

    row = settings.SETTINGS["score_cache_dir"]
    assert (row.env, row.default) == (rc.CACHE_ENV, rc.DEFAULT_CACHE_DIR)
    fam = registry.get("bertscore")
    assert "score_cache_dir" in fam.settings
    batch = registry.Batch(SYSTEM_A, REFS, [""] * len(REFS), [{} for _ in REFS])
    for expected in ({"hits": 0, "stored": 4}, {"hits": 4, "stored": 0}):
        ctx = registry.Context(settings={"bertscore_model": minilm_path, "bertscore_layers": 6,
                                         "score_cache_dir": str(tmp_path)})
        fam.score(batch, ctx)
        assert ctx.record["bertscore_reference_cache"] == expected
    ctx = registry.Context(settings={"bertscore_model": minilm_path, "bertscore_layers": 6,
                                     "score_cache_dir": "off"})
    fam.score(batch, ctx)
    assert ctx.record["bertscore_reference_cache"] == {"hits": 0, "stored": 0}


def test_any_cache_failure_falls_back_to_computing(minilm_path, tmp_path, monkeypatch, caplog):
    expected = _score(SYSTEM_A, REFS, minilm_path, "off")

    def broken(*args, **kwargs):
        raise RuntimeError("unexpected")

    for name in ("load", "store"):
        with monkeypatch.context() as m:
            m.setattr(rc.ReferenceCache, name, broken)
            with caplog.at_level(logging.WARNING, logger=bs.__name__):
                _close(_score(SYSTEM_A, REFS, minilm_path, tmp_path / name), expected)
    said = [r.getMessage() for r in caplog.records]
    assert any("unusable" in m for m in said) and any("storing failed" in m for m in said)
