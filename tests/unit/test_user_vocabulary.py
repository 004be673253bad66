"""A user domain's DVO vocabulary is keyed by its train file, not by its name alone: two
task folders that both call their domain ``harbour`` never share (or rebuild) one file,
and the task's DVO reads the file built from its own train split."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from custom_metrics.families.dvo import read_vocabulary
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks import family_options
from lm_eval_tasks.catalog import register_folder
from lm_eval_tasks.benchmarks.own.folder import NewTask, write_folder
from lm_eval_tasks.preparation.vocab import ensure_vocabulary


def _folder(root: Path, words: str) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    for split in ("test", "train"):
        rows = [{"document": f"{words} {split} number {i}", "summary": f"{words} {i}"} for i in range(4)]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_folder(NewTask(name="harbour", out=root / "tasks", data=data))
    return root / "tasks"


def _vocabulary(tasks: Path, vocab_dir: Path, monkeypatch) -> tuple[dict, dict]:
    monkeypatch.setattr(catalog, "_TABLE", None)  # each folder registers "harbour" in a table of its own
    register_folder(tasks)
    spec = catalog.lookup("harbour")
    return ensure_vocabulary(spec, {"vocab_dir": str(vocab_dir)}, progress=False), \
        family_options(spec, "dvo", {"vocab_dir": str(vocab_dir)})


def test_two_folders_with_one_domain_name_keep_two_vocabularies(tmp_path, monkeypatch):
    vocab_dir = tmp_path / "vocab"
    first = _folder(tmp_path / "a", "tides moorings quays")
    second = _folder(tmp_path / "b", "contracts courts verdicts")
    built_a, options_a = _vocabulary(first, vocab_dir, monkeypatch)
    built_b, options_b = _vocabulary(second, vocab_dir, monkeypatch)
    for built, options, root in ((built_a, options_a, tmp_path / "a"), (built_b, options_b, tmp_path / "b")):
        train = root / "data" / "train.jsonl"
        st = train.stat()
        stamp = f"{train}:{st.st_size}:{st.st_mtime_ns}"
        digest = hashlib.sha256(stamp.encode()).hexdigest()[:12]
        assert built["built"] is True and built["data_fingerprint"] == stamp
        assert built["path"] == options["vocabulary_file"] == str(vocab_dir / "own" / f"harbour-{digest}.tsv")
    assert built_a["path"] != built_b["path"]
    words_a, words_b = (set(read_vocabulary(b["path"]).words) for b in (built_a, built_b))
    assert {"tides", "quays"} <= words_a and not words_a & {"contracts", "verdicts"}
    assert {"contracts", "verdicts"} <= words_b and not words_b & {"tides", "quays"}

    again, _ = _vocabulary(first, vocab_dir, monkeypatch)  # the first folder's file was left alone
    assert again == {"path": built_a["path"], "built": False, "data_fingerprint": built_a["data_fingerprint"]}


def test_an_edited_train_file_gets_a_new_vocabulary(tmp_path, monkeypatch):
    tasks = _folder(tmp_path, "tides moorings quays")
    before, _ = _vocabulary(tasks, tmp_path / "vocab", monkeypatch)
    with open(tmp_path / "data" / "train.jsonl", "a") as fh:
        fh.write(json.dumps({"document": "lighthouse beacons", "summary": "lights"}) + "\n")
    after, _ = _vocabulary(tasks, tmp_path / "vocab", monkeypatch)
    assert after["built"] is True and after["path"] != before["path"] and Path(before["path"]).is_file()
    assert "lighthouse" in read_vocabulary(after["path"]).words


@pytest.mark.parametrize("family", ["rouge", "bertscore"])
def test_other_families_get_no_vocabulary_option(tmp_path, monkeypatch, family):
    tasks = _folder(tmp_path, "tides")
    monkeypatch.setattr(catalog, "_TABLE", None)
    register_folder(tasks)
    assert family_options(catalog.lookup("harbour"), family, {}) == {}
