"""Interrupted generation resumes: the generation journal in front of the model's ``generate_until``.

Why this shape: lm-eval builds the model before the suite's tasks and hands a task no
model object, so the journal is put in place where both meet: around one evaluation
(:func:`journaled`, entered by the harness adapter around lm-eval's ``evaluate``). For
that evaluation the model's ``generate_until`` first answers the suite's requests from
the journal (:mod:`~lm_eval_tasks.harness_parts.journal`) and passes only the others to
the real method; each response it makes is committed as it finishes, through the cache
hook lm-eval's backends call after every finished generation (``add_partial``: per
batch on ``hf``, per request or batch on the API backends), and whatever a backend did
not report that way is committed when its call returns (``vllm`` generates all its
requests in one call). Requests of tasks that are not the suite's pass through
untouched.

Ctrl-C (and SIGTERM, turned into the same unwinding for the evaluation) then ends in one
line naming what was kept (:func:`interrupted_line`); the same command run again
generates only what is missing. Nothing here imports ``lm_eval`` at import time: the
harness adapter hands lm-eval's ``evaluator`` module and argument parser to :func:`install`.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lm_eval_tasks.harness_parts.journal import Journal, model_identity, request_key, samples

log = logging.getLogger(__name__)


class Terminated(KeyboardInterrupt):
    """SIGTERM during an evaluation, raised where the run is so that it unwinds as Ctrl-C does."""


class _Hook:
    """The model's cache hook for one evaluation: the journal's, then whatever hook was there
    (lm-eval's ``--use_cache`` one)."""

    def __init__(self, previous: Any, session: "Session") -> None:
        self.previous = previous
        self.session = session

    def add_partial(self, attr: str, req: Any, res: Any) -> None:
        if self.previous is not None:
            self.previous.add_partial(attr, req, res)
        self.session.on_partial(attr, req, res)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["previous"], name)


class Session:
    """The journal of one evaluation: which task journals where, and what was served and made."""

    def __init__(self, lm: Any, model_name: str | None, model_args: Mapping[str, Any] | None,
                 seeds: Mapping[str, Any] | None = None) -> None:
        self._model = (lm, model_name, model_args)
        self._identity: dict[str, Any] | None = None
        #: the run's seeds (:func:`run_seeds`), keyed into every sampled request; None when
        #: unknown or unset, and then sampled requests bypass the journal
        self.seeds = dict(seeds) if seeds is not None else None
        self.rank = int(getattr(lm, "rank", 0) or os.environ.get("LOCAL_RANK", "0") or 0)
        #: task name -> journal folder, None where the task's setting is off
        self.folders: dict[str, str | None] = {}
        self.journals: dict[str, Journal] = {}
        #: task -> journal keys answered from the journal / committed to it by this process, and
        #: how many of its requests this process passed to the model (padding left out: :meth:`generate`)
        self.served: dict[str, set] = defaultdict(set)
        self.written: dict[str, set] = defaultdict(set)
        self.made: Counter = Counter()
        #: request key -> the requests waiting for that response (the cache hook commits them)
        self.pending: dict[str, deque] = defaultdict(deque)
        self.broken: str | None = None

    def register(self, task: str, folder: str | None) -> None:
        """Journal ``task``'s generations under ``folder`` (None: not at all)."""
        self.folders[task] = folder

    def journal(self, task: str | None) -> Journal | None:
        folder = self.folders.get(task or "")
        if folder is None or self.broken:
            return None
        if folder not in self.journals:
            if self._identity is None:
                self._identity = model_identity(*self._model)
            self.journals[folder] = Journal(folder, self._identity, self.rank)
        return self.journals[folder]

    def generate(self, call: Callable[[list], list], requests: list) -> list:
        """The responses to ``requests``: the journal's where it holds them, ``call``'s for the rest.

        Under data parallelism lm-eval pads a rank's requests with its last request again
        (the same object, beyond its ``repeats``) so that every rank runs as many; those
        copies are answered and journaled like any request but counted nowhere, so that the
        counts are the task's generations on every number of ranks.
        """
        results: list = [None] * len(requests)
        todo: list[int] = []
        seen: Counter = Counter()
        uses: Counter = Counter()
        padding: set[int] = set()
        for i, req in enumerate(requests):
            task = getattr(req, "task_name", None)
            uses[id(req)] += 1
            if uses[id(req)] > int(getattr(req, "repeats", 1) or 1):
                padding.add(i)
            journal = self.journal(task)
            args = getattr(req, "args", ())
            drawn = len(args) >= 2 and samples(args[1])
            # an unseeded draw is not journaled: no later run could tell it from another
            if journal is None or len(args) < 2 or (drawn and self.seeds is None):
                todo.append(i)
                continue
            base = request_key(args[0], args[1])  # what the backend's cache hook reports
            keyed = request_key(args[0], args[1], self.seeds) if drawn else base
            key = journal.key(keyed, seen[(journal.dir, keyed)])
            seen[(journal.dir, keyed)] += 1
            hit = journal.get(key)
            if hit is not None:
                results[i] = hit
                if i not in padding:
                    self.served[task].add(key)
            else:
                todo.append(i)
                self.pending[base].append((i, key, journal, req, i not in padding))
        self.made.update(t for i in todo if i not in padding
                         and (t := getattr(requests[i], "task_name", None)) in self.folders)
        served = len(requests) - len(todo)
        if served:
            log.warning("generation journal: %d of %d requests answered from %s; generating the other %d",
                        served, len(requests), ", ".join(str(j.dir) for j in self.journals.values()), len(todo))
        if todo:
            out = call([requests[i] for i in todo])
            for i, response in zip(todo, out, strict=True):
                results[i] = response
            for waiting in self.pending.values():  # what the backend's cache hook did not report
                for i, key, journal, req, counted in waiting:
                    self._commit(journal, key, results[i], req, counted)
            self.pending.clear()
        return results

    def on_partial(self, attr: str, req: Any, res: Any) -> None:
        """A backend finished one generation: commit it to the journal now."""
        if attr != "generate_until" or not self.pending:
            return
        try:
            waiting = self.pending.get(request_key(req[0], req[1]))
        except (TypeError, IndexError, KeyError):
            return
        if waiting:
            _, key, journal, inst, counted = waiting.popleft()
            self._commit(journal, key, res, inst, counted)

    def _commit(self, journal: Journal, key: str, response: Any, req: Any, counted: bool = True) -> None:
        if response is None or self.broken:
            return
        with _signals_deferred():  # the line written and its count agree, whenever Ctrl-C comes
            try:
                journal.add(key, response, req.task_name, req.doc_id)
            except OSError as exc:  # a full disk stops the journal, not the run
                self.broken = f"{journal.path}: {exc}"
                log.warning("generation journal %s cannot be written (%s); this run goes on without it",
                            journal.path, exc)
                return
            if counted:
                self.written[req.task_name].add(key)

    def record(self, task: str) -> dict[str, Any]:
        """What the results record about ``task``'s journal (``configs.<task>.metadata``), this rank:
        its folder (``off``, or ``failed: ...`` once a write failed), how many of the task's
        generations it answered and how many the model made in this run."""
        if task not in self.folders:
            return {}
        journal = self.journal(task)
        where = (str(journal.dir) if journal is not None
                 else "off" if self.folders[task] is None else f"failed: {self.broken}")
        return {"generation_journal": where, "generations_from_journal": len(self.served[task]),
                "generations_made": self.made[task]}

    def summary(self) -> dict[str, Any]:
        kept = sum(len(self.served[t] | self.written[t]) for t in set(self.served) | set(self.written))
        where = [str(j.path if j.path.exists() else j.dir) for j in self.journals.values()]
        return {"kept": kept, "where": where}

    def close(self) -> None:
        for journal in self.journals.values():
            journal.close()


#: the evaluation in progress (None between evaluations)
ACTIVE: Session | None = None
#: what the last evaluation kept, for the line printed when it was interrupted
LAST: dict[str, Any] = {}


def register(task: str, folder: str | None) -> None:
    """Called by each suite task as its requests are built: journal it under ``folder``."""
    if ACTIVE is not None:
        ACTIVE.register(task, folder)


def task_record(task: str) -> dict[str, Any]:
    return ACTIVE.record(task) if ACTIVE is not None else {}


#: the counts of :meth:`Session.record`, summed over data-parallel ranks
COUNTS = ("generations_from_journal", "generations_made")


def merge_records(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Every rank's :func:`task_record` as the run's: rank 0's folder, the ranks' counts summed."""
    merged = dict(parts[0]) if parts else {}
    for name in COUNTS:
        if name in merged:
            merged[name] = sum(int(p.get(name, 0)) for p in parts)
    return merged


#: a journal commit in progress, and the interruption that arrived during it (raised after it)
_COMMITTING = False
_DEFERRED: type[BaseException] | None = None


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C or SIGTERM arriving inside the block is raised when it ends: a generation's
    journal line and the count the interrupted line reports are written together or not at
    all. Why not signal masks: Python runs its handlers in the main thread whichever thread
    the signal reached, so only the handlers themselves can wait (:func:`_unwinding`)."""
    global _COMMITTING, _DEFERRED
    _COMMITTING = True
    try:
        yield
    finally:
        _COMMITTING = False
        if _DEFERRED is not None:
            raised, _DEFERRED = _DEFERRED, None
            raise raised()


def _unwinding(exc: type[BaseException]) -> Callable[[int, Any], None]:
    def handler(signum: int, frame: Any) -> None:
        global _DEFERRED
        if _COMMITTING:
            _DEFERRED = exc
            return
        raise exc()

    return handler


def _sigterm_unwinds() -> Callable[[], None]:
    """SIGTERM raises :class:`Terminated`, and Ctrl-C ``KeyboardInterrupt`` as it always does,
    each deferred past a journal commit, until the returned function is called (main thread,
    default handlers only: a handler someone else installed is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    ours = {sig: exc for sig, exc, default in ((signal.SIGTERM, Terminated, signal.SIG_DFL),
                                               (signal.SIGINT, KeyboardInterrupt, signal.default_int_handler))
            if signal.getsignal(sig) == default}
    before = {sig: signal.getsignal(sig) for sig in ours}
    for sig, exc in ours.items():
        signal.signal(sig, _unwinding(exc))

    def restore() -> None:
        for sig, handler in before.items():
            signal.signal(sig, handler)

    return restore


@contextmanager
def journaled(lm: Any, model_name: str | None, model_args: Mapping[str, Any] | None,
              seeds: Mapping[str, Any] | None = None) -> Iterator[Session]:
    """For one evaluation: the journal in front of ``lm.generate_until``, its hook on ``lm``,
    and SIGTERM unwinding like Ctrl-C; all undone on leaving. ``seeds``: :func:`run_seeds`."""
    global ACTIVE
    session = Session(lm, model_name, model_args, seeds)
    original = lm.generate_until
    own = "generate_until" in vars(lm)
    previous_hook = getattr(lm, "cache_hook", None)

    def generate_until(requests: list, *args: Any, **kwargs: Any) -> list:
        return session.generate(lambda todo: original(todo, *args, **kwargs), requests)

    lm.generate_until = generate_until
    if hasattr(lm, "set_cache_hook"):  # every lm-eval backend; one that is not commits per call
        lm.set_cache_hook(_Hook(previous_hook, session))
    restore_sigterm = _sigterm_unwinds()
    ACTIVE = session
    LAST.clear()
    try:
        yield session
    finally:
        restore_sigterm()
        ACTIVE = None
        session.close()
        LAST.update(session.summary())
        if hasattr(lm, "set_cache_hook"):
            lm.set_cache_hook(previous_hook)
        if own:
            lm.generate_until = original
        else:
            del lm.generate_until


def interrupted_line() -> str | None:
    """What an interrupted evaluation kept, in words; None when no journal was in use."""
    if not LAST.get("where"):
        return None
    return (f"{LAST['kept']} generation(s) of this run are kept in the generation journal "
            f"{', '.join(LAST['where'])}; running the same command again resumes, generating only the missing ones")


def exit_after(exc: BaseException) -> None:
    """End the process as the signal that interrupted it would have (SIGTERM: status 143)."""
    if isinstance(exc, Terminated):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


__all__ = ["Session", "Terminated", "interrupted_line", "journaled", "merge_records", "register", "run_seeds",
           "task_record"]


def _simple_evaluate() -> dict[str, Any] | None:
    """The locals of lm-eval's ``simple_evaluate`` running this evaluation, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and "model_args" in frame.f_locals:
            return frame.f_locals
        frame = frame.f_back
    return None


def model_args(parse: Callable[[str], dict[str, Any]]) -> tuple[str | None, dict[str, Any]] | None:
    """``--model`` and the parsed ``--model_args`` of this run, or None when they cannot be found.

    Why: lm-eval 0.4.13 merges the model's arguments into every task's metadata, so a
    task cannot tell ``pretrained`` from a misspelled setting by the metadata alone, and
    the generation journal keys on them; ``simple_evaluate`` holds them in its locals.
    ``parse`` is lm-eval's own ``--model_args`` parser, handed in by the harness adapter.
    """
    found = _simple_evaluate()
    if found is None:
        return None
    args, model = found["model_args"], found.get("model")
    # parsed as simple_evaluate parses them before merging them into the metadata
    parsed = parse(args) if isinstance(args, str) else dict(args or {})
    return (model if isinstance(model, str) else None), parsed


#: the seeds ``--seed`` sets that a backend's draws can depend on: ``simple_evaluate``'s
#: argument -> the name the results JSON records it under
SEEDS = {"random_seed": "random_seed", "numpy_random_seed": "numpy_seed", "torch_random_seed": "torch_seed"}


def run_seeds() -> dict[str, int] | None:
    """The seeds of this run that a sampled generation depends on, or None when a sampled
    generation cannot be tied to any (one of them unset, or no ``simple_evaluate``).

    Which: lm-eval's ``--seed`` fills four arguments of ``simple_evaluate``, which seeds
    Python's ``random``, NumPy and torch with them before the model generates and records
    them in the results (``random_seed``, ``numpy_seed``, ``torch_seed``, ``fewshot_seed``).
    ``hf`` draws its samples from torch's generator; the other two are kept because a
    backend may draw from them. The few-shot seed is left out: it only picks
    demonstrations, which are in the prompt the key holds already. ``vllm`` and the API
    backends take their sampling seed from ``--model_args seed=...``, which is in the
    model's identity. They are read from ``simple_evaluate``'s locals, as :func:`model_args`
    reads the model's arguments, because lm-eval hands ``evaluate`` neither.
    """
    found = _simple_evaluate()
    if found is None:
        return None
    seeds = {name: found.get(arg) for arg, name in SEEDS.items()}
    return seeds if all(isinstance(v, int) for v in seeds.values()) else None


def install(evaluator: Any, parse: Callable[[str], dict[str, Any]]) -> None:
    """Put the generation journal around lm-eval's ``evaluator.evaluate``, once per process.

    ``simple_evaluate`` calls ``evaluate`` by its module attribute, so replacing that
    attribute is the one place where the model object and the suite's tasks meet.
    """
    evaluate = evaluator.evaluate
    if getattr(evaluate, "suite_journal", False):
        return

    @functools.wraps(evaluate)
    def run(*args: Any, **kwargs: Any) -> Any:
        lm = kwargs["lm"] if "lm" in kwargs else args[0]
        with journaled(lm, *(model_args(parse) or (None, None)), run_seeds()):
            return evaluate(*args, **kwargs)

    run.suite_journal = True  # type: ignore[attr-defined]
    evaluator.evaluate = run
