"""The generation journal's keying and commits, without a model.

A response is served only for the same model identity and the exact request (context,
generation settings, occurrence, and the run's seeds when the request samples); a model
saved again in place is another identity; a response is on disk as soon as the backend
reports it finished, before its batch returns; a line cut by a killed process is skipped,
and the next line written starts on a line of its own; a file that can no longer grow (a
real ``RLIMIT_FSIZE``, the kernel's EFBIG at the write, as a full disk gives ENOSPC) stops
the journal but not the evaluation, and closing it does not raise. The recorded counts
are the task's generations: data-parallel padding is answered but not counted.
"""

from __future__ import annotations

import json
import resource
import signal
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from lm_eval_tasks.harness_parts import resume
from lm_eval_tasks.harness_parts.journal import Journal, model_identity, request_key, samples

GREEDY = {"until": ["\n\n"], "max_gen_toks": 64, "do_sample": False}
SAMPLED = {**GREEDY, "do_sample": True, "temperature": 1.0}
SEED_1 = {"random_seed": 1, "numpy_seed": 1, "torch_seed": 1}
SEED_2 = {"random_seed": 2, "numpy_seed": 2, "torch_seed": 2}


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
              tasks: dict[str, Path | None] | None = None, seeds: dict | None = SEED_1) -> tuple[list, dict]:
    """One evaluation as the harness adapter runs it: tasks register, then generation."""
    with resume.journaled(lm, "hf", model_args or {"pretrained": lm.pretrained}, seeds) as session:
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
    assert records["t"] == {"generation_journal": str(path.parent), "generations_from_journal": 3,
                            "generations_made": 2}
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
    assert records == {"suite": {"generation_journal": str(path.parent), "generations_from_journal": 2,
                                 "generations_made": 0},
                       "harness_task": {"generation_journal": "off", "generations_from_journal": 0,
                                        "generations_made": 2}}


def test_ranks_counts_are_summed():
    parts = [{"generation_journal": "/j/x", "generations_from_journal": 2, "generations_made": 0},
             {"generation_journal": "/j/x", "generations_from_journal": 1, "generations_made": 4}]
    assert resume.merge_records(parts) == {"generation_journal": "/j/x", "generations_from_journal": 3,
                                           "generations_made": 4}
    off = {"generation_journal": "off", "generations_from_journal": 0, "generations_made": 3}
    assert resume.merge_records([off] * 2) == {**off, "generations_made": 6}


def test_a_sampled_request_is_keyed_by_the_seeds_and_a_greedy_one_is_not(tmp_path, model_dir):
    folder = tmp_path / "journal"

    def run(gen_kwargs: dict, seeds: dict | None) -> tuple[list, dict]:
        lm = Backend(str(model_dir))
        _, records = _evaluate(lm, folder, _requests("t", 3, gen_kwargs), seeds=seeds)
        return lm.asked, records["t"]

    def lines() -> int:
        return sum(len(p.read_text().splitlines()) for p in folder.glob("*/rank0.jsonl"))

    asked, record = run(SAMPLED, SEED_1)
    assert len(asked) == 3 and record["generations_from_journal"] == 0 and record["generations_made"] == 3
    asked, record = run(SAMPLED, SEED_2)  # another seed draws again: nothing is served
    assert len(asked) == 3 and (record["generations_from_journal"], record["generations_made"]) == (0, 3)
    assert lines() == 6
    asked, record = run(SAMPLED, SEED_1)  # the first seed's draws are kept under their own key
    assert asked == [] and (record["generations_from_journal"], record["generations_made"]) == (3, 0)
    asked, record = run({**GREEDY, "temperature": 0.7}, SEED_1)  # a temperature alone samples
    asked2, record2 = run({**GREEDY, "temperature": 0.7}, SEED_2)
    assert len(asked) == len(asked2) == 3 and record2["generations_from_journal"] == 0
    asked, record = run(SAMPLED, None)  # seeds unknown: neither served nor written
    assert len(asked) == 3 and record["generations_made"] == 3 and lines() == 12

    asked, record = run(GREEDY, SEED_1)
    assert len(asked) == 3 and lines() == 15
    asked, record = run(GREEDY, SEED_2)  # greedy decoding shares generations across seeds
    assert asked == [] and (record["generations_from_journal"], record["generations_made"]) == (3, 0)
    asked, record = run(GREEDY, None)
    assert asked == [] and record["generations_from_journal"] == 3 and lines() == 15

    # a greedy request keeps the key it had before seeds were keyed: older journals still answer
    assert request_key("ctx", GREEDY) == request_key("ctx", GREEDY, None) != request_key("ctx", GREEDY, SEED_1)
    assert [samples(g) for g in (GREEDY, SAMPLED, {"do_sample": "True"}, {"temperature": "0.5"},
                                 {"temperature": 0.0}, {}, None)] == [False, True, True, True, False, False, False]


def test_the_seeds_are_those_simple_evaluate_was_given():
    def simple_evaluate(model_args, random_seed, numpy_random_seed, torch_random_seed, fewshot_random_seed):
        return resume.run_seeds()

    assert simple_evaluate("pretrained=x", 0, 1234, 7, 99) == {"random_seed": 0, "numpy_seed": 1234,
                                                                "torch_seed": 7}
    assert simple_evaluate("pretrained=x", 0, None, 8, 52) is None  # a seed left unset: draws are not tied
    assert resume.run_seeds() is None  # no simple_evaluate on the stack


@contextmanager
def _file_size_limit(size: int):
    """This process may not grow any file past ``size`` bytes (RLIMIT_FSIZE) inside the block:
    the kernel refuses the write with EFBIG (Python ignores SIGXFSZ), as a full disk refuses it
    with ENOSPC."""
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_a_journal_that_cannot_grow_stops_without_losing_the_evaluation(tmp_path, model_dir, caplog):
    folder = tmp_path / "journal"
    _evaluate(Backend(str(model_dir)), folder, _requests("t", 1))
    [path] = folder.glob("*/rank0.jsonl")
    line = len(_lines(path)[0].encode()) + 1
    # room for one more whole line and half of the next: the write after that fails mid-line
    lm = Backend(str(model_dir))
    with _file_size_limit(path.stat().st_size + line + line // 2):
        out, records = _evaluate(lm, folder, _requests("t", 5))  # closing the journal must not raise
    assert out == [f"document {i} of t"[::-1] for i in range(5)]  # the evaluation got every generation
    assert records["t"]["generation_journal"].startswith(f"failed: {path}: [Errno 27]"), records
    assert (records["t"]["generations_from_journal"], records["t"]["generations_made"]) == (1, 4)
    assert "cannot be written" in caplog.text and "this run goes on without it" in caplog.text
    complete = [json.loads(text)["doc_id"] for text in _lines(path)[:2]]
    assert complete == [0, 1] and len(_lines(path)) == 3  # the line being written was cut

    # the disk has room again: what was committed is answered, the cut line is skipped, and
    # the first line written after it stands on a line of its own
    caplog.clear()
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, _requests("t", 5))
    assert lm.asked == [f"document {i} of t" for i in (2, 3, 4)]
    assert (records["t"]["generations_from_journal"], records["t"]["generations_made"]) == (2, 3)
    assert "1 unreadable line(s) skipped" in caplog.text
    caplog.clear()
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, _requests("t", 5))
    assert lm.asked == [] and records["t"]["generations_from_journal"] == 5
    assert "1 unreadable line(s) skipped" in caplog.text  # the cut line, and only it


def test_a_line_cut_by_a_killed_process_does_not_swallow_the_next_one(tmp_path, model_dir):
    folder = tmp_path / "journal"
    _evaluate(Backend(str(model_dir)), folder, _requests("t", 2))
    [path] = folder.glob("*/rank0.jsonl")
    with open(path, "a") as fh:  # killed in the middle of writing a line
        fh.write('{"key": "abc", "resp')
    lm = Backend(str(model_dir))
    _evaluate(lm, folder, _requests("t", 4))
    assert lm.asked == ["document 2 of t", "document 3 of t"]
    lines = _lines(path)
    assert lines[2] == '{"key": "abc", "resp' and [json.loads(t)["doc_id"] for t in lines[3:]] == [2, 3]
    journal = Journal(folder, model_identity(lm, "hf", {"pretrained": lm.pretrained}))
    assert journal.unreadable == 1 and len(journal.entries) == 4
    lm = Backend(str(model_dir))
    _, records = _evaluate(lm, folder, _requests("t", 4))
    assert lm.asked == [] and records["t"]["generations_from_journal"] == 4


def test_data_parallel_padding_is_answered_but_not_counted(tmp_path, model_dir):
    """lm-eval pads a rank's requests with its last request object again (beyond its
    ``repeats``); a request with ``repeats=2`` is two generations of its own."""
    folder = tmp_path / "journal"
    reqs = _requests("t", 3, SAMPLED)
    reqs[0].repeats = 2
    padded = [reqs[0], reqs[0], reqs[1], reqs[2], reqs[2], reqs[2]]  # as lm-eval orders the clones

    def run() -> tuple[Backend, list, dict]:
        lm = Backend(str(model_dir))
        out, records = _evaluate(lm, folder, padded)
        return lm, out, records["t"]

    lm, out, record = run()
    assert len(out) == len(lm.asked) == 6 and out[-1] == out[-2] == out[-3]
    assert (record["generations_from_journal"], record["generations_made"]) == (0, 4)
    assert resume.LAST["kept"] == 4
    lm, out, record = run()
    assert lm.asked == [] and len(out) == 6
    assert (record["generations_from_journal"], record["generations_made"]) == (4, 0)
