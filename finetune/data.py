"""Training examples from a suite task, tokenised the way the harness sees them.

Records come from :func:`lm_eval_tasks.catalog.task_examples` with ``shots=0``
(the task looked up in :mod:`lm_eval_tasks.catalog`): the task's own loader, filters and zero-shot prompt (document truncated
inside the prompt by the task's budget), so training and evaluation prompts cannot
drift. Pass the same ``metadata`` to ``lm_eval --metadata`` as to ``finetune
--metadata`` when you change a prompt budget.

Causal LMs: input = prompt tokens + target tokens, target = ``" " + summary`` + EOS;
labels are -100 on the prompt (loss on the summary tokens only). The prompt is
encoded exactly as lm-eval 0.4's HF backend encodes a context (the tokenizer's
default special tokens, i.e. a BOS where the tokenizer adds one, unless
``add_bos_token`` says otherwise); the target tokens are the continuation of the
prompt's tokens in the joint encoding of ``prompt + " " + summary`` when that
encoding starts with the prompt's tokens (true for BPE and SentencePiece tokenizers
at a space boundary), else the separate encoding of ``" " + summary``.

Seq2seq: encoder input = the prompt encoded as the harness does (the tokenizer's
special tokens, e.g. T5's ``</s>``); labels = the summary's tokens with EOS.

Over-long examples (``max_length``): ``overlong: drop`` removes and counts them;
``truncate`` keeps the whole prompt and cuts the target (causal), or keeps the last
``max_length`` source tokens as the harness's left truncation would (seq2seq), and
counts them. ``require_full_document`` also drops records whose document the task's
prompt budget cut (AdaptEval's "fit without truncation").
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from lm_eval_tasks.catalog import TaskSpec, UnknownTask, lookup
from lm_eval_tasks.data.loader import DataError, mirror_path, resolve_data_dir, split_exists
from lm_eval_tasks.settings import resolve

log = logging.getLogger(__name__)


@dataclass
class Encoded:
    """One tokenised example."""

    id: str
    input_ids: list[int]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass
class SplitData:
    """The examples of one split plus the bookkeeping the run card records."""

    split: str
    examples: list[Encoded]
    source_records: int = 0
    examined: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    truncated: dict[str, int] = field(default_factory=dict)
    boundary_fallbacks: int = 0
    sha256: str = ""
    requested: int | None = None

    @property
    def supervised_tokens(self) -> int:
        return sum(sum(1 for t in e.labels if t != -100) for e in self.examples)

    @property
    def tokens(self) -> int:
        return sum(len(e.input_ids) for e in self.examples)

    def summary(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "source_records": self.source_records,
            "examined": self.examined,
            "dropped": dict(self.dropped),
            "truncated": dict(self.truncated),
            "tokenizer_boundary_fallbacks": self.boundary_fallbacks,
            "requested": self.requested,
            "examples": len(self.examples),
            "tokens": self.tokens,
            "supervised_tokens": self.supervised_tokens,
            "sha256": self.sha256,
        }


# ---------------------------------------------------------------------- records


def task_spec(task: str) -> TaskSpec:
    """The catalogue's task; an unknown name is a :class:`DataError` with the catalogue's message."""
    try:
        return lookup(task)
    except UnknownTask as exc:
        raise DataError(str(exc)) from None


def check_task(task: str, split: str, metadata: dict) -> None:
    """Clear errors for an unknown task or a missing split, before any loading."""
    spec = task_spec(task)
    benchmark, domain = spec.benchmark, spec.subset
    data_dir = resolve(metadata, "data_dir")
    root = resolve_data_dir(data_dir)
    if not split_exists(benchmark, domain, split, data_dir, hub=spec.hub_source):
        where = (f"expected {mirror_path(root, benchmark, domain, split)}" if root is not None else
                 f"no data_dir mirror is set (metadata data_dir, --data-dir or $DOMSUM_DATA_DIR) and "
                 f"{benchmark}/{domain} has no hub source")
        raise DataError(
            f"task {task!r} has no {split!r} split ({where}); fine-tuning needs a train "
            f"split (validation is optional). Prepare a mirror with "
            f"`domsum prepare-data --help`."
        )


def has_split(task: str, split: str, metadata: dict) -> bool:
    """Whether the task's benchmark/subset has ``split`` (in the mirror, or a hub source)."""
    spec = task_spec(task)
    return split_exists(spec.benchmark, spec.subset, split, resolve(metadata, "data_dir"), hub=spec.hub_source)


def task_records(task: str, split: str, metadata: dict) -> list[dict]:
    """The task's records of ``split`` with its zero-shot ``prompt`` and ``summary``."""
    from lm_eval_tasks.catalog import task_examples

    recs = task_examples(task_spec(task), split=split, metadata=dict(metadata), shots=0)
    for r in recs:
        if "prompt" not in r or "summary" not in r:
            raise DataError(f"task {task!r}: records lack 'prompt'/'summary' (got {sorted(r)})")
    return recs


def records_sha256(records: list[dict]) -> str:
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps([str(r.get("id")), r["prompt"], r["summary"]], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


# ---------------------------------------------------------------------- encoding


class Encoder:
    """Tokenises (prompt, summary) pairs for one model kind."""

    def __init__(self, tokenizer, kind: str, max_length: int, max_target_length: int,
                 overlong: str, add_bos_token: bool | None = None):
        self.tok = tokenizer
        self.kind = kind
        self.max_length = max_length
        self.max_target_length = max_target_length
        self.overlong = overlong
        self.special = {} if add_bos_token is None else {"add_special_tokens": bool(add_bos_token)}
        if tokenizer.eos_token_id is None:
            raise DataError("the tokenizer has no EOS token; the target needs one to end on")
        self.eos = tokenizer.eos_token_id
        self.fallbacks = 0

    def encode_batch(self, recs: list[dict], dropped: Counter, truncated: Counter) -> list[Encoded | None]:
        """One entry per record, ``None`` where the record was dropped (and counted)."""
        if self.kind == "causal":
            return self._causal(recs, dropped, truncated)
        return self._seq2seq(recs, dropped, truncated)

    def _causal(self, recs, dropped, truncated) -> list[Encoded | None]:
        prompts = [r["prompt"] for r in recs]
        fulls = [r["prompt"] + " " + r["summary"] for r in recs]
        p_ids = self.tok(prompts, **self.special)["input_ids"]
        f_ids = self.tok(fulls, **self.special)["input_ids"]
        out = []
        for r, p, f in zip(recs, p_ids, f_ids):
            if f[: len(p)] == p and len(f) > len(p):
                t = list(f[len(p):])
            else:
                self.fallbacks += 1
                t = self.tok(" " + r["summary"], add_special_tokens=False)["input_ids"]
            t = t + [self.eos]
            if len(p) + len(t) > self.max_length:
                room = self.max_length - len(p)
                if self.overlong == "drop" or room < 2:
                    dropped["too_long"] += 1
                    out.append(None)
                    continue
                t = t[:room]
                truncated["target"] += 1
            out.append(Encoded(str(r.get("id")), list(p) + t, [-100] * len(p) + t))
        return out

    def _seq2seq(self, recs, dropped, truncated) -> list[Encoded | None]:
        src = self.tok([r["prompt"] for r in recs])["input_ids"]
        tgt = self.tok([r["summary"] for r in recs])["input_ids"]
        out = []
        for r, s, t in zip(recs, src, tgt):
            s, t = list(s), list(t)
            if not t or t[-1] != self.eos:
                t.append(self.eos)
            if len(s) > self.max_length or len(t) > self.max_target_length:
                if self.overlong == "drop":
                    dropped["too_long"] += 1
                    out.append(None)
                    continue
                if len(s) > self.max_length:
                    s = s[-self.max_length:]   # the harness's left truncation
                    truncated["source"] += 1
                if len(t) > self.max_target_length:
                    t = t[: self.max_target_length - 1] + [self.eos]
                    truncated["target"] += 1
            out.append(Encoded(str(r.get("id")), s, t))
        return out


def build_split(task: str, split: str, metadata: dict, encoder: Encoder, *,
                size: int | None = None, limit: int | None = None, seed: int = 42,
                require_full_document: bool = False, chunk: int = 256) -> SplitData:
    """Encode a split; with ``size``, a seeded subset of ``size`` examples that fit.

    Records are visited in a seeded random order and encoded in chunks until ``size``
    examples are kept, so a 10k subset of a 200k-record train split does not tokenise
    everything; the kept examples are returned in their original order. ``limit``
    (smoke runs) caps the count the same way.
    """
    recs = task_records(task, split, metadata)
    want = size if size is not None else None
    if limit is not None:
        want = limit if want is None else min(want, limit)
    order = list(range(len(recs)))
    if want is not None and want < len(recs):
        random.Random(seed).shuffle(order)
    dropped: Counter = Counter()
    truncated: Counter = Counter()
    kept: list[tuple[int, Encoded]] = []
    examined = 0
    start_fallbacks = encoder.fallbacks
    for c in range(0, len(order), chunk):
        if want is not None and len(kept) >= want:
            break
        idx = order[c : c + chunk]
        batch = []
        for i in idx:
            r = recs[i]
            examined += 1
            if not r["summary"].strip():
                dropped["empty_summary"] += 1
                continue
            if require_full_document and r.get("document") is not None and r["document"] not in r["prompt"]:
                dropped["truncated_document"] += 1
                continue
            batch.append((i, r))
        enc = encoder.encode_batch([r for _, r in batch], dropped, truncated) if batch else []
        kept.extend((i, e) for (i, _), e in zip(batch, enc) if e is not None)
    if want is not None and len(kept) > want:
        # the last chunk overshot: the records beyond ``want`` were not needed
        kept = kept[:want]
    kept.sort(key=lambda x: x[0])
    chosen_recs = [recs[i] for i, _ in kept]
    data = SplitData(
        split=split,
        examples=[e for _, e in kept],
        source_records=len(recs),
        examined=examined,
        dropped=dict(dropped),
        truncated=dict(truncated),
        boundary_fallbacks=encoder.fallbacks - start_fallbacks,
        sha256=records_sha256(chosen_recs),
        requested=size,
    )
    if size is not None and len(data.examples) < size and (limit is None or limit >= size):
        log.warning("%s/%s: asked for %d examples, only %d fit (dropped %s)",
                    task, split, size, len(data.examples), dict(dropped))
    if not data.examples:
        raise DataError(
            f"task {task!r}: no usable {split!r} examples ({len(recs)} records, dropped "
            f"{dict(dropped)}); raise max_length or use overlong: truncate"
        )
    return data


# ---------------------------------------------------------------------- packing


def pack(examples: list[Encoded], max_length: int, seed: int) -> list[Encoded]:
    """Greedy packing of shuffled examples into windows of at most ``max_length``.

    Labels keep their -100 prompt masks; each example ends with its EOS. Attention
    crosses example boundaries inside a window (the usual trade-off of packing).
    """
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    out: list[Encoded] = []
    ids: list[int] = []
    labels: list[int] = []
    names: list[str] = []
    for i in order:
        e = examples[i]
        if ids and len(ids) + len(e) > max_length:
            out.append(Encoded("+".join(names), ids, labels))
            ids, labels, names = [], [], []
        ids = ids + e.input_ids
        labels = labels + e.labels
        names.append(e.id)
    if ids:
        out.append(Encoded("+".join(names), ids, labels))
    return out


# ---------------------------------------------------------------------- torch side


class TokenDataset:
    """A map-style dataset of encoded examples (what the Trainer iterates)."""

    def __init__(self, examples: list[Encoded]):
        self.examples = examples

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> dict[str, list[int]]:
        e = self.examples[i]
        return {"input_ids": e.input_ids, "labels": e.labels}


class Collator:
    """Right-pads a batch; padded positions get attention 0 and label -100.

    Counts the non-padding input tokens and supervised tokens it hands out, for the
    throughput figures in the run card.
    """

    def __init__(self, pad_id: int, kind: str, pad_to_multiple_of: int | None = None):
        self.pad_id = pad_id
        self.kind = kind
        self.multiple = pad_to_multiple_of
        self.tokens = 0
        self.supervised = 0

    def _width(self, n: int) -> int:
        if self.multiple:
            return ((n + self.multiple - 1) // self.multiple) * self.multiple
        return n

    def __call__(self, batch: list[dict]) -> dict:
        import torch

        w = self._width(max(len(b["input_ids"]) for b in batch))
        ids = torch.full((len(batch), w), self.pad_id, dtype=torch.long)
        att = torch.zeros((len(batch), w), dtype=torch.long)
        for i, b in enumerate(batch):
            n = len(b["input_ids"])
            ids[i, :n] = torch.tensor(b["input_ids"], dtype=torch.long)
            att[i, :n] = 1
        if self.kind == "causal":
            labels = torch.full((len(batch), w), -100, dtype=torch.long)
            for i, b in enumerate(batch):
                labels[i, : len(b["labels"])] = torch.tensor(b["labels"], dtype=torch.long)
        else:
            lw = self._width(max(len(b["labels"]) for b in batch))
            labels = torch.full((len(batch), lw), -100, dtype=torch.long)
            for i, b in enumerate(batch):
                labels[i, : len(b["labels"])] = torch.tensor(b["labels"], dtype=torch.long)
        self.tokens += int(att.sum())
        self.supervised += int((labels != -100).sum())
        return {"input_ids": ids, "attention_mask": att, "labels": labels}
