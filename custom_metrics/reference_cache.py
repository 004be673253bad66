"""The BERTScore reference cache: references' embeddings kept on disk across runs.

Reference cache (:class:`ReferenceCache`): every system scored on a task shares the
task's references, so their embeddings are kept on disk across runs and processes and
the second and later systems pay only for their candidates. One file per (encoder,
text): the folder is named by a hash of the encoder's identity (model name, its
directory's files with size and mtime -- for a hub snapshot also the blob hashes --,
layer, the tokenizer's max length, device type, dtype, and the bert-score /
transformers / torch versions), the file by the SHA-256 of the stripped text. An entry
holds the normalised float32 embeddings exactly as computed, the non-special mask and
the truncation flag, behind a magic string, the sizes and a BLAKE2 checksum (~94 KB
per 60-token reference with MiniLM). float16 would halve that and moves F1 by at most
1.1e-5 (MiniLM, news summaries), but a warm run would then differ from a cold or
uncached one; float32 keeps them bit-identical. Entries are written to a temporary
file and renamed, so a killed run leaves no partial entry; an entry that fails its
checks, or a cache folder that cannot be read or written, never fails scoring: it is
computed instead, with one warning. References and candidates are always encoded in
separate length-sorted batches, so cold, warm and uncached runs batch every text alike
and give the same numbers (tested to 1e-6; bit-identical when every reference is
cached or none is). Folder: the ``score_cache_dir`` setting (``$DOMSUM_SCORE_CACHE``,
default ``~/.cache/domsum/scores``; ``off`` disables). Reference tokens for ROUGE are not
cached: tokenizing 350 references takes ~10 ms, against ~4 s to encode them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Protocol


class Encoder(Protocol):
    """What the cache reads of a BERTScore encoder (:class:`custom_metrics.families.bertscore.Encoder`);
    a protocol, so this module does not import the one that uses it."""

    model_name: str
    model: Any

    def identity(self) -> dict | None: ...

log = logging.getLogger("custom_metrics.families.bertscore")

#: the reference cache's default folder (the ``score_cache_dir`` row of lm_eval_tasks/setting_table.py)
DEFAULT_CACHE_DIR = "~/.cache/domsum/scores"
#: its environment variable (same row)
CACHE_ENV = "DOMSUM_SCORE_CACHE"
#: values of ``score_cache_dir`` that turn the cache off
CACHE_OFF = frozenset({"off", "none", "false", "no", "0"})


def is_off(value: Any) -> bool:
    """A folder or file setting switched off: empty, or one of the score cache's words
    (``off``, ``none``, ``false``, ``no``, ``0``), so every such setting reads them alike."""
    text = "" if value is None else str(value).strip().lower()
    return not text or text in CACHE_OFF
#: bump when an entry's layout or meaning changes (old folders are then simply not read)
CACHE_FORMAT = 1
_MAGIC = b"DSBERT1\n"
#: magic, tokens, dim, dtype code (0: float32), truncated flag, 6 pad bytes, BLAKE2b-128 of the payload
_HEAD = struct.Struct("<8sIIBB6x16s")
_WARNED: set[str] = set()



def warn_once(kind: str, msg: str, *args: Any) -> None:
    if kind not in _WARNED:
        _WARNED.add(kind)
        log.warning(msg, *args)


def resolve_cache_dir(value: Any = None) -> Path | None:
    """The reference cache's folder for a ``score_cache_dir`` value, or None (cache off).

    None or an empty string: ``$DOMSUM_SCORE_CACHE``, else :data:`DEFAULT_CACHE_DIR`;
    ``off`` (also ``none``, ``false``, ``no``, ``0``) or ``False``: no cache.
    """
    if value is False:
        return None
    text = "" if value is None else str(value).strip()
    if not text:
        text = os.environ.get(CACHE_ENV, "").strip() or DEFAULT_CACHE_DIR
    if text.lower() in CACHE_OFF:
        return None
    return Path(text).expanduser()


def _model_files_dir(model: str) -> Path | None:
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    try:  # a hub id: its snapshot in the local hub cache (the folder is named by the commit)
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(model, "config.json")
    except Exception:  # noqa: BLE001 - not a hub id, or no hub cache: unidentified
        return None
    return Path(hit).parent if isinstance(hit, str) else None


def weights_identity(model: str) -> dict | None:
    """The encoder's files as the cache keys them: folder, and each top-level file's name,
    size, mtime and (for hub-cache symlinks) blob name, i.e. its content hash. None when the
    model's files cannot be found."""
    folder = _model_files_dir(model)
    if folder is None:
        return None
    files = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return None
    for entry in entries:
        try:
            if entry.name.startswith(".") or not entry.is_file():
                continue
            st = entry.stat()
            blob = os.path.basename(os.path.realpath(entry.path)) if entry.is_symlink() else None
        except OSError:
            continue
        files.append([entry.name, st.st_size, st.st_mtime_ns, blob])
    return {"folder": str(folder), "files": files}


def text_key(text: str) -> str:
    """The SHA-256 of a text (the cache entry's file name)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ReferenceCache:
    """Reference embeddings of one encoder on disk: ``<root>/bertscore-v1/<encoder key>/<hh>/<sha256>.emb``.

    ``load`` returns what it can read and verify; ``store`` writes each entry atomically
    (temporary file, then rename). Any failure is logged once and treated as a miss.
    """

    def __init__(self, root: Path, identity: Mapping[str, Any], dim: int) -> None:
        blob = json.dumps(identity, sort_keys=True, ensure_ascii=True).encode()
        self.key = hashlib.sha256(blob).hexdigest()[:32]
        self.identity = dict(identity)
        self.dir = Path(root) / f"bertscore-v{CACHE_FORMAT}" / self.key
        self.dim = int(dim)
        self.hits = self.stored = 0
        self._writable = True

    @classmethod
    def for_encoder(cls, cache_dir: Any, enc: Encoder) -> "ReferenceCache | None":
        """The cache of ``enc`` under ``cache_dir`` (see :func:`resolve_cache_dir`); None when off
        or when the encoder's weights cannot be identified."""
        root = resolve_cache_dir(cache_dir)
        if root is None:
            return None
        identity = enc.identity()
        if identity is None:
            warn_once(f"unidentified:{enc.model_name}", "BERTScore reference cache: cannot identify the "
                       "weights of %s (not a folder, not in the hub cache); its embeddings are not cached",
                       enc.model_name)
            return None
        return cls(root, identity, enc.model.config.hidden_size)

    def path(self, text: str) -> Path:
        h = text_key(text)
        return self.dir / h[:2] / f"{h}.emb"

    # ------------------------------------------------------------------ entries

    @staticmethod
    def encode(emb: Any, keep: Any, truncated: bool) -> bytes:
        import torch

        e = emb.detach().to(torch.float32).cpu().contiguous().numpy().tobytes()
        k = keep.detach().to(torch.uint8).cpu().contiguous().numpy().tobytes()
        payload = e + k
        digest = hashlib.blake2b(payload, digest_size=16).digest()
        return _HEAD.pack(_MAGIC, emb.shape[0], emb.shape[1], 0, int(bool(truncated)), digest) + payload

    def decode(self, buf: bytearray) -> tuple | None:
        """(embeddings, mask, truncated) from an entry's bytes; None unless every check passes."""
        import numpy as np
        import torch

        if len(buf) < _HEAD.size:
            return None
        magic, n, dim, code, truncated, digest = _HEAD.unpack_from(buf)
        if magic != _MAGIC or code != 0 or dim != self.dim or n == 0 or truncated > 1:
            return None
        if len(buf) != _HEAD.size + n * dim * 4 + n:
            return None
        if hashlib.blake2b(memoryview(buf)[_HEAD.size:], digest_size=16).digest() != digest:
            return None
        emb = np.frombuffer(buf, dtype=np.float32, count=n * dim, offset=_HEAD.size).reshape(n, dim)
        keep = np.frombuffer(buf, dtype=np.uint8, count=n, offset=_HEAD.size + n * dim * 4)
        return torch.from_numpy(emb), torch.from_numpy(keep.astype(bool)), bool(truncated)

    def load(self, texts: Iterable[str]) -> dict[str, tuple]:
        """text -> (embeddings, mask, truncated) for every text with a readable, valid entry."""
        out: dict[str, tuple] = {}
        if not self.dir.is_dir():
            return out
        for text in texts:
            path = self.path(text)
            try:
                with open(path, "rb") as fh:
                    buf = bytearray(os.fstat(fh.fileno()).st_size)
                    got = fh.readinto(buf)
            except FileNotFoundError:
                continue
            except OSError as exc:
                warn_once("read", "BERTScore reference cache: cannot read %s (%s); computing instead",
                           path, exc)
                continue
            entry = self.decode(buf) if got == len(buf) else None
            if entry is None:
                warn_once("corrupt", "BERTScore reference cache: entry %s is damaged; computing it again "
                           "(further damaged entries are not reported)", path)
                continue
            out[text] = entry
        self.hits += len(out)
        return out

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp)
            raise

    def store(self, entries: Mapping[str, tuple]) -> None:
        """Write ``text -> (embeddings, mask, truncated)`` entries; stops quietly (one warning)
        when the folder cannot be written."""
        if not self._writable or not entries:
            return
        try:
            info = self.dir / "encoder.json"
            if not info.exists():
                self._write(info, json.dumps(self.identity, indent=1, sort_keys=True).encode())
            for text, (emb, keep, truncated) in entries.items():
                self._write(self.path(text), self.encode(emb, keep, truncated))
                self.stored += 1
        except OSError as exc:
            self._writable = False
            warn_once("write", "BERTScore reference cache: cannot write under %s (%s); scoring goes on "
                       "without storing", self.dir, exc)
