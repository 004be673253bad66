"""The generation journal: every generation committed as it finishes, keyed so it is never
served to another model or another request.

Why a journal of the suite's own (and not lm-eval's ``--use_cache``): lm-eval writes
samples only at the end of a run, so Ctrl-C or a killed job loses every generation.
lm-eval's ``CachingLM`` commits each response, but its key is the request alone
(``hash_args(method, args)``): the same prompt answered by another model, another
revision or another dtype is served from the cache. It is also opt-in, set up before
the suite's tasks are loaded (so the suite cannot give it a better key), stores pickles,
and skips sampled requests. Here the key is

* the **model's identity** (:func:`model_identity`): the backend class, the ``--model``
  name and every ``--model_args`` value, what the loaded model says about itself (name
  or path, hub commit, dtype, a hash of its configuration, context length, BOS and
  truncation settings, an API model's name and URL) and a fingerprint (names, sizes,
  modification times) of every local file or folder those values name, so a model
  saved again in place regenerates;
* the **exact request**: the context string as the model receives it (chat template,
  system instruction, demonstrations, prompt variant and document budget are all
  rendered into it) and the generation settings (``until``, ``max_gen_toks``,
  ``do_sample``, temperature...);
* for a request that draws samples (:func:`samples`: ``do_sample`` true or a temperature
  above 0), the run's **seeds** (:func:`request_key`): without them a run with
  ``--seed 2`` would be served the draws of ``--seed 1`` and a seed-variance study would
  see none. A greedy request's key has no seed, so greedy runs share generations across
  seeds;
* the request's **occurrence** in the batch (the n-th identical request), so repeated
  sampled requests keep their own answers.

A journal is a folder per model identity (``identity.json`` says which, keys in its
URLs masked by :mod:`custom_metrics.secrets`), holding one JSON-lines file per
data-parallel rank (``rank<R>.jsonl``); each line is appended in one
unbuffered write and fsync'd as its generation finishes, so a write that fails (a full
disk) leaves nothing behind to be written again at close. A rank reads every rank's file
(a resumed run may shard documents differently) and writes only its own. A line cut by a
killed process or a full disk is counted and skipped when read, and the next line
written after it starts on a line of its own, so the cut line never swallows a finished
generation. Nothing here imports ``lm_eval``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from custom_metrics import secrets

log = logging.getLogger(__name__)

#: bumped when the key or the line layout changes: an older journal is then not read
FORMAT = 1
#: attributes of a backend (``HFLM``, ``VLLM``, API models) that change what it generates
BACKEND_ATTRIBUTES = ("pretrained", "revision", "peft", "delta", "backend", "max_length", "truncation",
                      "add_bos_token", "think_end_token", "model", "base_url", "tokenized_requests",
                      "tokenizer_backend")
#: ``--model_args`` keys and backend attributes that may name local model files (fingerprinted)
FILE_KEYS = ("pretrained", "peft", "delta", "gguf_file", "tokenizer", "model")
#: at most this many files of one local model folder enter the fingerprint (largest folders
#: hold weight shards; their names, sizes and times are enough to tell a changed model)
MAX_FINGERPRINT_FILES = 2000


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _fingerprint(value: str) -> list | None:
    """(relative name, size, modification time) of the local file or folder ``value`` names."""
    try:
        path = Path(value).expanduser()
        if not value or len(value) > 4096 or not path.exists():
            return None
        if path.is_file():
            st = path.stat()
            return [[path.name, st.st_size, st.st_mtime_ns]]
        files = sorted(p for p in path.rglob("*") if p.is_file())[:MAX_FINGERPRINT_FILES]
        return [[p.relative_to(path).as_posix(), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    except (OSError, ValueError):
        return None


def _loaded_model(backend: Any) -> dict[str, Any]:
    """What a loaded ``transformers`` model says about itself (empty for other backends)."""
    model = getattr(backend, "_model", None) or getattr(backend, "model", None)
    config = getattr(model, "config", None)
    if config is None or isinstance(model, str):
        return {}
    out: dict[str, Any] = {"name_or_path": str(getattr(model, "name_or_path", "")),
                           "dtype": str(getattr(model, "dtype", "")),
                           "commit": getattr(config, "_commit_hash", None)}
    try:
        out["config_sha"] = _digest(config.to_dict())
    except Exception:  # noqa: BLE001 - a configuration that does not serialise: its name and dtype remain
        pass
    return out


def model_identity(lm: Any, model_name: str | None, model_args: Mapping[str, Any] | None) -> dict[str, Any]:
    """Everything about the evaluated model that changes what it generates for one request.

    ``lm`` is the backend object the evaluator calls (``CachingLM`` is looked through);
    ``model_name`` and ``model_args`` are ``--model`` and ``--model_args`` as parsed, when
    known. Where-it-runs settings outside ``--model_args`` (``--batch_size``,
    ``--device``) are not part of it.
    """
    backend = lm
    while type(backend).__name__ == "CachingLM" and getattr(backend, "lm", None) is not None:
        backend = backend.lm
    attrs: dict[str, Any] = {}
    for name in BACKEND_ATTRIBUTES:
        try:
            value = getattr(backend, name, None)
        except Exception:  # noqa: BLE001 - a property a backend cannot answer before use
            continue
        if value is not None and _scalar(value):
            attrs[name] = value
    args = {str(k): v if _scalar(v) else repr(v) for k, v in (model_args or {}).items()}
    named = {v for source in (args, attrs) for k, v in source.items() if k in FILE_KEYS and isinstance(v, str)}
    files = {text: fp for text in sorted(named) if (fp := _fingerprint(text)) is not None}
    return {"format": FORMAT, "class": f"{type(backend).__module__}.{type(backend).__qualname__}",
            "model": model_name, "model_args": args, "backend": attrs, "loaded": _loaded_model(backend),
            "files": _digest(files) if files else None}


def samples(gen_kwargs: Any) -> bool:
    """Whether generation settings draw samples: ``do_sample`` true, or a temperature above 0.

    Why a temperature alone counts: lm-eval's API backends send it whatever ``do_sample``
    says, and the ``hf`` backend samples when it is set without ``do_sample``. Reading a
    greedy request as sampled only costs a generation; the reverse serves one seed's draw
    to another.
    """
    if not isinstance(gen_kwargs, Mapping):
        return False
    do_sample = gen_kwargs.get("do_sample")
    if do_sample is True or str(do_sample).strip().lower() in ("true", "1", "yes"):
        return True
    try:
        return float(gen_kwargs.get("temperature") or 0) > 0
    except (TypeError, ValueError):
        return True  # a temperature that is not a number: not provably greedy


def request_key(context: Any, gen_kwargs: Any, seeds: Mapping[str, Any] | None = None) -> str:
    """The key of one request, without the model (:meth:`Journal.key` adds it).

    ``seeds`` are the run's seeds, given for a request that :func:`samples`; a greedy
    request's key leaves them out (and is the key it had before seeds were keyed).
    """
    parts: list[Any] = [str(context) if isinstance(context, str) else context, gen_kwargs]
    if seeds is not None:
        parts.append({"seeds": dict(seeds)})
    return _digest(parts)


class Journal:
    """The generations of one model identity under ``folder``, as this rank reads and writes them."""

    def __init__(self, folder: str | Path, identity: Mapping[str, Any], rank: int = 0) -> None:
        self.identity_sha = _digest(identity)
        self.dir = Path(folder).expanduser() / self.identity_sha[:24]
        self.path = self.dir / f"rank{rank}.jsonl"
        self._identity = dict(identity)
        #: this rank's file, opened for appending at the first commit
        self._fd: int | None = None
        #: the file ends inside a line (cut by a killed process or a failed write): the next
        #: line written starts with a line break of its own
        self._cut = False
        self.entries: dict[str, Any] = {}
        #: lines of every rank's file that hold no readable generation (cut mid-write)
        self.unreadable = 0
        for part in sorted(self.dir.glob("rank*.jsonl")):
            self._read(part)
        if self.unreadable:
            log.warning("generation journal %s: %d unreadable line(s) skipped (cut mid-write by a killed process "
                        "or a full disk); their generations are made again", self.dir, self.unreadable)

    def key(self, request: str, occurrence: int = 0) -> str:
        """The key of the ``occurrence``-th identical ``request`` (:func:`request_key`) of this model."""
        return _digest([self.identity_sha, request, occurrence])

    def _read(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            log.warning("generation journal %s cannot be read (%s); its generations are made again", path, exc)
            return
        for line in lines:
            if not line.strip():
                continue  # the line break a commit after a cut line starts with
            try:
                row = json.loads(line)
                self.entries[row["key"]] = row["response"]
            except (ValueError, KeyError, TypeError):
                self.unreadable += 1

    def get(self, key: str) -> Any:
        """The journaled response of ``key``, or None."""
        return self.entries.get(key)

    def _open(self) -> int:
        """This rank's file, for appending; its identity card written first (once)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        card = self.dir / "identity.json"
        if not card.exists():
            tmp = card.with_name(f".identity.{os.getpid()}.partial")
            try:
                tmp.write_text(json.dumps(secrets.mask_obj(self._identity), indent=1, sort_keys=True, default=repr),
                               encoding="utf-8")
                os.replace(tmp, card)
            finally:
                tmp.unlink(missing_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            self._cut = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        except OSError:
            os.close(fd)
            raise
        return fd

    def add(self, key: str, response: Any, task: str | None, doc_id: Any) -> None:
        """Commit one finished generation: written and fsync'd before this returns.

        The line goes out in unbuffered writes: when one fails (a full disk) nothing stays
        in a buffer for :meth:`close` to write again, and the next commit starts a new line.
        """
        if self._fd is None:
            self._fd = self._open()
        row = {"key": key, "task": task, "doc_id": doc_id, "response": response}
        data = memoryview((("\n" if self._cut else "") + json.dumps(row, ensure_ascii=False, default=str)
                           + "\n").encode("utf-8"))
        self._cut = True  # until the whole line is out
        while data:
            data = data[os.write(self._fd, data):]
        self._cut = False
        os.fsync(self._fd)
        self.entries[key] = response

    def close(self) -> None:
        """Close this rank's file; never raises (every line is already written or failed)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                log.warning("generation journal %s: closing it failed (%s)", self.path, exc)


__all__ = ["Journal", "model_identity", "request_key", "samples"]
