"""The one bounded cache of loaded scorer models, and when its models are freed.

Why one cache: loading a scorer model (a BERTScore encoder, a causal LM for perplexity or
MAUVE, a masked LM for BLANC) is the expensive part of scoring, so a model is loaded once
and reused while a process scores; but a process that keeps every model it ever loaded
holds gigabytes of host and accelerator memory it no longer needs (a battery run loads
SciBERT, GPT-2 and BERT besides the BERTScore encoder). Every model-based metric gets its
model here, keyed by what changes the loaded object: ``(kind, model, *settings)``, e.g.
``("bertscore", "roberta-large", 17)`` or ``("causal", "gpt2")``.

Bound: :data:`MAX_MODELS` entries, least recently used evicted first. Four covers the
most one task uses (the medqsum battery: the BERTScore encoder, SciBERT, a causal LM
shared by perplexity and MAUVE, BLANC's masked LM) without reloading within the task.

Lifetime: :meth:`ModelCache.release` drops entries and frees accelerator memory. A
process that scores several tasks (one ``lm_eval`` run) says which models each task
needs before any is scored (:meth:`ModelCache.hold`) and lets go after scoring one
(:meth:`ModelCache.let_go`); only models no other task of the process still holds are
released. The trade-off: releasing after every task would reload the same encoder for
each of fifteen DomainSum tasks (measured on 2 CPU cores: MiniLM-L6 takes 0.05-0.1 s to
load, once its files are in the OS cache, against 10 microseconds to find it here;
roberta-large, 1.4 GB, takes seconds, and its weights go to the GPU again), while never
releasing keeps every model a long process ever used. Holding by task frees a model the
moment the last task that needs it is scored, and the bound caps what stays meanwhile.
Holders are weakly referenced: a task object that is gone holds nothing.

Thread-safe: the judge and the scorers may run in threads. Two threads asking for the
same model load it once (the second waits); other models are served meanwhile.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: loaded models kept at most (least recently used evicted first); see the module docstring
MAX_MODELS = 4


@dataclass(frozen=True)
class CacheStats:
    """What the cache did since it was made: models loaded, requests served from it,
    entries evicted by the bound and entries dropped by :meth:`ModelCache.release`."""

    loads: int = 0
    hits: int = 0
    evictions: int = 0
    released: int = 0


def accelerator_in_use() -> bool:
    """True when this process has put work on an accelerator (CUDA initialised, or Apple MPS).

    Why ask: on a CPU-only run the memory of a dropped model returns by reference counting
    alone, and a full ``gc.collect()`` per release cost 0.5 s of a 350-pair scoring step;
    only an accelerator's allocator keeps blocks that need collecting and handing back.
    """
    import sys

    torch = sys.modules.get("torch")  # a process that never imported torch uses no accelerator
    if torch is None:
        return False
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return True
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def free_accelerator_memory() -> bool:
    """Collect garbage and hand the accelerator's cached blocks back; nothing on a CPU-only
    run (:func:`accelerator_in_use`). True when it freed."""
    if not accelerator_in_use():
        return False
    import torch

    gc.collect()  # cycles holding tensors keep their device blocks until collected
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    elif hasattr(torch, "mps") and hasattr(torch.mps, "empty_cache"):
        torch.mps.empty_cache()
    return True


class ModelCache:
    """Loaded models keyed by ``(kind, model, *settings)``, LRU-bounded, thread-safe."""

    def __init__(self, max_entries: int = MAX_MODELS) -> None:
        if max_entries < 1:
            raise ValueError("a model cache holds at least one model")
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self._loading: dict[tuple, threading.Lock] = {}
        self._holders: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()
        self._loads = self._hits = self._evictions = self._released = 0

    # ------------------------------------------------------------------ use

    def get(self, key: tuple, load: Callable[[], T]) -> T:
        """The model under ``key``, loaded by ``load()`` on first use (nothing is cached
        when ``load`` raises: the next request tries again)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self._hits += 1
                return self._entries[key]
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:  # one load per key at a time; other keys are served meanwhile
            with self._lock:
                if key in self._entries:  # another thread loaded it while this one waited
                    self._entries.move_to_end(key)
                    self._hits += 1
                    return self._entries[key]
            try:
                value = load()
            except BaseException:
                with self._lock:
                    self._loading.pop(key, None)
                raise
            with self._lock:  # stored and the gate dropped at once: a newcomer finds one or the other
                self._loading.pop(key, None)
                self._entries[key] = value
                self._loads += 1
                evicted = []
                while len(self._entries) > self.max_entries:
                    evicted.append(self._entries.popitem(last=False))
                    self._evictions += 1
        if evicted:
            del evicted
            free_accelerator_memory()
        return value

    def loaded(self) -> list[tuple]:
        """The keys held now, least recently used first."""
        with self._lock:
            return list(self._entries)

    @property
    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._loads, self._hits, self._evictions, self._released)

    # ------------------------------------------------------------------ lifetime

    def release(self, keep: Iterable[str] = ()) -> list[tuple]:
        """Drop every entry whose model (``key[1]``) is not in ``keep`` and free the memory
        it held; the keys dropped. ``release()`` drops everything."""
        keep = set(keep)
        with self._lock:
            gone = [k for k in self._entries if not (len(k) > 1 and k[1] in keep)]
            dropped = [self._entries.pop(k) for k in gone]
            self._released += len(gone)
        if dropped:
            del dropped
            free_accelerator_memory()
        return gone

    def hold(self, owner: Hashable, models: Iterable[str]) -> None:
        """``owner`` (e.g. a task) will score with ``models``: :meth:`let_go` keeps them."""
        with self._lock:
            self._holders[owner] = frozenset(str(m) for m in models if m)

    def let_go(self, owner: Hashable, keep: Iterable[str] = ()) -> list[tuple]:
        """``owner`` is done with its models but ``keep``; release every model that no
        holder still holds (models loaded with no holder included); the keys dropped."""
        with self._lock:
            kept = frozenset(str(m) for m in keep if m)
            if kept:
                self._holders[owner] = kept
            else:
                self._holders.pop(owner, None)
            held = set().union(*self._holders.values()) if len(self._holders) else set()
        return self.release(held)

    def held(self) -> set[str]:
        """The models some live holder still holds."""
        with self._lock:
            return set().union(*self._holders.values()) if len(self._holders) else set()


#: the process's cache, which every model-based metric uses
MODELS = ModelCache()


def get(key: tuple, load: Callable[[], T]) -> T:
    """:meth:`ModelCache.get` of the process's cache."""
    return MODELS.get(key, load)


def release(keep: Iterable[str] = ()) -> list[tuple]:
    """:meth:`ModelCache.release` of the process's cache (``release()``: free every model)."""
    return MODELS.release(keep)


def loaded() -> list[tuple]:
    """The keys the process's cache holds now, least recently used first."""
    return MODELS.loaded()


def stats() -> CacheStats:
    """:attr:`ModelCache.stats` of the process's cache."""
    return MODELS.stats


def hold(owner: Hashable, models: Iterable[str]) -> None:
    """:meth:`ModelCache.hold` on the process's cache."""
    MODELS.hold(owner, models)


def let_go(owner: Hashable, keep: Iterable[str] = ()) -> list[tuple]:
    """:meth:`ModelCache.let_go` on the process's cache."""
    return MODELS.let_go(owner, keep)
