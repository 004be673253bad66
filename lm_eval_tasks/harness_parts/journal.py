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
* the request's **occurrence** in the batch (the n-th identical request), so repeated
  sampled requests keep their own answers.

A journal is a folder per model identity (``identity.json`` says which, keys in its
URLs masked by :mod:`custom_metrics.secrets`), holding one
JSON-lines file per data-parallel rank (``rank<R>.jsonl``); each line is appended,
flushed and fsync'd as its generation finishes. A rank reads every rank's file (a
resumed run may shard documents differently) and writes only its own. A line cut by a
killed process is skipped when read. Nothing here imports ``lm_eval``.
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


def request_key(context: Any, gen_kwargs: Any) -> str:
    """The key of one request, without the model (:meth:`Journal.key` adds it)."""
    return _digest([str(context) if isinstance(context, str) else context, gen_kwargs])


class Journal:
    """The generations of one model identity under ``folder``, as this rank reads and writes them."""

    def __init__(self, folder: str | Path, identity: Mapping[str, Any], rank: int = 0) -> None:
        self.identity_sha = _digest(identity)
        self.dir = Path(folder).expanduser() / self.identity_sha[:24]
        self.path = self.dir / f"rank{rank}.jsonl"
        self._identity = dict(identity)
        self._fh: Any = None
        self.entries: dict[str, Any] = {}
        for part in sorted(self.dir.glob("rank*.jsonl")):
            self._read(part)

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
            try:
                row = json.loads(line)
                self.entries[row["key"]] = row["response"]
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a killed process

    def get(self, key: str) -> Any:
        """The journaled response of ``key``, or None."""
        return self.entries.get(key)

    def add(self, key: str, response: Any, task: str | None, doc_id: Any) -> None:
        """Commit one finished generation: appended, flushed and fsync'd before this returns."""
        if self._fh is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            card = self.dir / "identity.json"
            if not card.exists():
                tmp = card.with_name(f".identity.{os.getpid()}.partial")
                tmp.write_text(json.dumps(secrets.mask_obj(self._identity), indent=1, sort_keys=True, default=repr),
                               encoding="utf-8")
                os.replace(tmp, card)
            self._fh = open(self.path, "a", encoding="utf-8")
        row = {"key": key, "task": task, "doc_id": doc_id, "response": response}
        self._fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.entries[key] = response

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


__all__ = ["Journal", "model_identity", "request_key"]
