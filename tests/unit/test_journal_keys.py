"""The generation journal's keying and commits, without a model.

A response is served only for the same model identity and the exact request (context,
generation settings, occurrence); a model saved again in place is another identity; a
response is on disk as soon as the backend reports it finished, before its batch
returns; a line cut by a killed process is skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from lm_eval_tasks.harness_parts import resume
from lm_eval_tasks.harness_parts.journal import Journal, model_identity, request_key

GREEDY = {"until": ["\n\n"], "max_gen_toks": 64, "do_sample": False}


class Backend:
    """What the journal asks of a backend: ``generate_until``, the cache hook, ``rank``.

    Answers each context with its reversed text and reports every answer to the cache
    hook as lm-eval's backends do; ``stop_after`` raises KeyboardInterrupt after that
    many answers, as Ctrl-C in the middle of a batch would.
    """

    def __init__(self, pretrained: str, stop_after: int | None = None) -> None:
        self.pretrained = pretrained
        self.rank = 0
        self.cache_hook = SimpleNamespace(add_partial=lambda *a: None)
        self.stop_after = stop_after
        self.asked: list[str] = []

    def set_cache_hook(self, hook) -> None:
        self.cache_hook = hook

    def generate_until(self, requests: list) -> list[str]:
        out = []
        for req in requests:
            if self.stop_after is not None and len(out) == self.stop_after:
                raise KeyboardInterrupt
            context, gen_kwargs = req.args
            self.asked.append(context)
            out.append(context[::-1])
            self.cache_hook.add_partial("generate_until", (context, gen_kwargs), out[-1])
        return out


def _requests(task: str, n: int, gen_kwargs: dict = GREEDY) -> list:
    return [SimpleNamespace(args=(f"document {i} of {task}", dict(gen_kwargs)), task_name=task, doc_id=i)
            for i in range(n)]


def _evaluate(lm: Backend, folder: Path, requests: list, model_args: dict | None = None,
              tasks: dict[str, Path | None] | None = None) -> tuple[list, dict]:
    """One evaluation as the harness adapter runs it: tasks register, then generation."""
    with resume.journaled(lm, "hf", model_args or {"pretrained": lm.pretrained}) as session:
        for task in tasks or {r.task_name: folder for r in requests}:
            session.register(task, None if tasks and tasks[task] is None else str(folder))
        out = lm.generate_until(requests)
        records = {t: session.record(t) for t in session.folders}
    return out, records


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text("{}")
    (d / "model.safetensors").write_bytes(b"weights-1")
    return d


def test_a_rerun_generates_only_what_the_journal_lacks(tmp_path, model_dir):
    folder = tmp_path / "journal"
    lm = Backend(str(model_dir), stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        _evaluate(lm, folder, _requests("t", 5))
    assert resume.LAST["kept"] == 3 and resume.interrupted_line().startswith("3 generation(s) of this run are kept")
    [path] = folder.glob("*/rank0.jsonl")  # committed as each finished, before the batch returned
    assert [json.loads(line)["doc_id"] for line in path.read_text().splitlines()] == [0, 1, 2]
    assert "generate_until" not in vars(lm)  # the backend is as it was after the evaluation

    lm = Backend(str(model_dir))
    out, records = _evaluate(lm, folder, _requests("t", 5))
    assert lm.asked == ["document 3 of t", "document 4 of t"]
    assert out == [f"document {i} of t"[::-1] for i in range(5)]
    assert records["t"] == {"generation_journal": str(path.parent), "generations_from_journal": 3}
    assert len(path.read_text().splitlines()) == 5


def test_another_model_settings_or_request_is_never_served(tmp_path, model_dir):
    folder = tmp_path / "journal"
    _evaluate(Backend(str(model_dir)), folder, _requests("t", 2))

    other = tmp_path / "other"
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"weights-1")
    cases = {
        "another model": (Backend(str(other)), _requests("t", 2), None),
        "another dtype": (Backend(str(model_dir)), _requests("t", 2), {"pretrained": str(model_dir), "dtype": "float16"}),
        "other generation settings": (Backend(str(model_dir)), _requests("t", 2, {**GREEDY, "max_gen_toks": 65}), None),
    }
    for name, (lm, reqs, args) in cases.items():
        _, records = _evaluate(lm, folder, reqs, args)
        assert len(lm.asked) == 2 and records["t"]["generations_from_journal"] == 0, name

    # the same model saved again in place (new weights, same path) is another model
    (model_dir / "model.safetensors").write_bytes(b"weights-22")
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, _requests("t", 2))
    assert len(lm.asked) == 2 and records["t"]["generations_from_journal"] == 0
    # ... and from then on that model resumes from its own journal
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, _requests("t", 2))
    assert lm.asked == [] and records["t"]["generations_from_journal"] == 2


def test_keys_tell_identical_requests_and_identities_apart(tmp_path, model_dir):
    ident = model_identity(Backend(str(model_dir)), "hf", {"pretrained": str(model_dir)})
    assert ident["backend"]["pretrained"] == str(model_dir) and ident["files"]
    journal = Journal(tmp_path, ident)
    base = request_key("ctx", GREEDY)
    assert base == request_key("ctx", dict(reversed(list(GREEDY.items()))))  # key order does not matter
    assert base != request_key("ctx ", GREEDY) and base != request_key("ctx", {**GREEDY, "until": ["\n"]})
    assert journal.key(base, 0) != journal.key(base, 1)  # a repeated (sampled) request keeps its own answers
    other = Journal(tmp_path, {**ident, "model_args": {"pretrained": str(model_dir), "revision": "v2"}})
    assert other.dir != journal.dir and other.key(base) != journal.key(base)


def test_untracked_tasks_pass_through_and_a_cut_line_is_skipped(tmp_path, model_dir):
    folder = tmp_path / "journal"
    reqs = _requests("suite", 2) + _requests("harness_task", 2)
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, reqs, tasks={"suite": folder})  # harness_task never registered
    [path] = folder.glob("*/rank0.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert {r["task"] for r in rows} == {"suite"} and len(rows) == 2
    with open(path, "a") as fh:  # a killed process's half-written line
        fh.write('{"key": "abc", "resp')
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, reqs, tasks={"suite": folder, "harness_task": None})
    assert lm.asked == ["document 0 of harness_task", "document 1 of harness_task"]
    assert records == {"suite": {"generation_journal": str(path.parent), "generations_from_journal": 2},
                       "harness_task": {"generation_journal": "off"}}


def test_ranks_counts_are_summed():
    parts = [{"generation_journal": "/j/x", "generations_from_journal": 2},
             {"generation_journal": "/j/x", "generations_from_journal": 1}]
    assert resume.merge_records(parts) == {"generation_journal": "/j/x", "generations_from_journal": 3}
    assert resume.merge_records([{"generation_journal": "off"}] * 2) == {"generation_journal": "off"}
