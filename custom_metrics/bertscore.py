"""BERTScore precision / recall / F1 with one encoder per process, batched.

Formula (Zhang et al., 2020, "BERTScore: Evaluating Text Generation with BERT"):
contextual token embeddings x (candidate) and y (reference) from layer L of a
pretrained encoder, L2-normalised; with special tokens ([CLS]/[SEP] or <s>/</s>)
carrying weight 0 as in the reference implementation,

    P = mean_{i in cand, non-special} max_{j in ref} x_i . y_j
    R = mean_{j in ref,  non-special} max_{i in cand} x_i . y_j
    F = 2 P R / (P + R)

No idf weighting and no baseline rescaling (the settings the DomainSum and AdaptEval
releases use through ``evaluate``). Tokenizer: the encoder's own, through the
``bert-score`` package's ``sent_encode`` (same ids as the reference implementation);
the encoder is loaded and cut to L layers by ``bert_score.utils.get_model``.

Why our own loop instead of ``BERTScorer.score``: the encoder is created once per
(model, layer) and kept for the process (``bert_score.score()`` reloads it on every
call, which is what makes per-document scoring slow); each distinct sentence is
encoded once, in batches sorted by exact token length (least padding); and empty
strings are handled (``bert-score`` crashes on them with current ``transformers``).
Agreement with ``bert_score.BERTScorer`` is tested to 1e-5.

Default encoder: the library's English default (``roberta-large``, layer 17). A local
directory or another hub id may be given; the layer then defaults to the library's
table entry, else the encoder's last layer. Empty predictions or references score 0.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_LANG = "en"
_LOCK = threading.Lock()
_SCORERS: dict[tuple[str, int], "Encoder"] = {}


def default_model() -> str:
    """The bert-score library's default English encoder."""
    from bert_score.utils import lang2model

    return lang2model[DEFAULT_LANG]


def resolve_layers(model: str, num_layers: int | None) -> int:
    """The layer to read: explicit, else bert-score's table, else the last layer."""
    if num_layers is not None:
        return int(num_layers)
    from bert_score.utils import model2layers

    if model in model2layers:
        return model2layers[model]
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(model)
    n = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "num_layers", None)
    if n is None:
        raise ValueError(f"bertscore: cannot tell the layer count of {model!r}; set num_layers")
    log.info("bertscore: %s is not in bert-score's layer table; using its last layer (%d)", model, n)
    return int(n)


class Encoder:
    """A loaded, layer-truncated encoder that embeds sentences in length-sorted batches."""

    def __init__(self, model: str, num_layers: int, device: str | None = None) -> None:
        import torch
        from bert_score.utils import get_model, get_tokenizer

        self.model_name, self.num_layers = model, num_layers
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = get_tokenizer(model, use_fast=False)
        self.model = get_model(model, num_layers).to(self.device).eval()
        special = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        self.special_ids = {i for i in special if i is not None}
        pad = self.tokenizer.pad_token_id
        self.pad_id = 0 if pad is None else pad
        self.last_truncated = 0

    def token_ids(self, sentence: str) -> list[int]:
        from bert_score.utils import sent_encode

        return sent_encode(self.tokenizer, sentence)

    def embed(self, sentences: Sequence[str], batch_size: int = 64, *, progress: bool | None = False,
              desc: str = "BERTScore") -> dict[str, Any]:
        """sentence -> (normalised embeddings [n, d], non-special mask [n]) for each distinct one.

        ``progress``: a bar on stderr advancing per encoded sentence (None: ``$DOMSUM_PROGRESS``).
        """
        import torch

        from custom_metrics.progress import bar

        uniq = list(dict.fromkeys(sentences))
        ids = {s: self.token_ids(s) for s in uniq}
        # bert-score cuts every input at the tokenizer's limit (512 for BERT/RoBERTa); an
        # input that fills it was cut, and its tail does not count towards the score
        self.last_truncated = sum(len(v) >= self.tokenizer.model_max_length for v in ids.values())
        order = sorted(uniq, key=lambda s: len(ids[s]))
        out: dict[str, Any] = {}
        with torch.inference_mode(), bar(len(order), desc, unit="text", enabled=progress) as shown:
            for b in range(0, len(order), batch_size):
                batch = order[b : b + batch_size]
                width = max(len(ids[s]) for s in batch)
                x = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for k, s in enumerate(batch):
                    x[k, : len(ids[s])] = torch.tensor(ids[s])
                    mask[k, : len(ids[s])] = 1
                emb = self.model(x.to(self.device), attention_mask=mask.to(self.device))[0]
                emb = emb / emb.norm(dim=-1, keepdim=True)
                emb = emb.float().cpu()
                for k, s in enumerate(batch):
                    n = len(ids[s])
                    keep = torch.tensor([t not in self.special_ids for t in ids[s]])
                    out[s] = (emb[k, :n], keep)
                shown.update(len(batch))
        return out


def get_scorer(model: str | None = None, num_layers: int | None = None) -> Encoder:
    """The process-wide encoder for (model, layer); loaded on first use."""
    model = model or default_model()
    layers = resolve_layers(model, num_layers)
    key = (model, layers)
    with _LOCK:
        enc = _SCORERS.get(key)
        if enc is None:
            enc = Encoder(model, layers)
            _SCORERS[key] = enc
    return enc


def _greedy(cand: Any, ref: Any) -> tuple[float, float, float]:
    (x, xkeep), (y, ykeep) = cand, ref
    sim = x @ y.T
    if not bool(xkeep.any()) or not bool(ykeep.any()):
        return (0.0, 0.0, 0.0)
    p = float(sim.max(dim=1).values[xkeep].mean())
    r = float(sim.max(dim=0).values[ykeep].mean())
    f = 2 * p * r / (p + r) if p + r != 0 else 0.0
    return (p, r, f)


def bertscore_per_document(
    predictions: Sequence[str],
    references: Sequence[str],
    model: str | None = None,
    num_layers: int | None = None,
    batch_size: int = 64,
    report: dict | None = None,
    *,
    progress: bool | None = False,
    desc: str = "BERTScore",
) -> list[tuple[float, float, float]]:
    """(P, R, F1) for every pair; empty sides give (0, 0, 0).

    ``report``, when given, receives ``truncated_inputs``: how many distinct texts
    filled the encoder's input limit and were cut (bert-score's own behaviour).
    ``progress``: a bar on stderr per encoded text (None: ``$DOMSUM_PROGRESS``); off by
    default for library calls, on through the metric registry.
    """
    if len(predictions) != len(references):
        raise ValueError(
            f"bertscore: {len(predictions)} predictions but {len(references)} references"
        )
    out: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * len(predictions)
    keep = [
        i for i, (p, r) in enumerate(zip(predictions, references))
        if p and p.strip() and r and r.strip()
    ]
    if not keep:
        return out
    enc = get_scorer(model, num_layers)
    cands = [predictions[i].strip() for i in keep]
    refs = [references[i].strip() for i in keep]
    emb = enc.embed(cands + refs, batch_size=batch_size, progress=progress, desc=desc)
    if report is not None:
        report["truncated_inputs"] = report.get("truncated_inputs", 0) + enc.last_truncated
    for i, c, r in zip(keep, cands, refs):
        out[i] = _greedy(emb[c], emb[r])
    return out


def bertscore(
    predictions: Sequence[str],
    references: Sequence[str],
    model: str | None = None,
    num_layers: int | None = None,
    batch_size: int = 64,
) -> dict[str, float]:
    """Corpus means: keys ``bertscore_p``, ``bertscore_r``, ``bertscore_f1``."""
    per = bertscore_per_document(predictions, references, model, num_layers, batch_size)
    n = len(per)
    if n == 0:
        return {"bertscore_p": 0.0, "bertscore_r": 0.0, "bertscore_f1": 0.0}
    return {
        "bertscore_p": sum(x[0] for x in per) / n,
        "bertscore_r": sum(x[1] for x in per) / n,
        "bertscore_f1": sum(x[2] for x in per) / n,
    }


def _distribution_version(name: str, fallback: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return fallback


def scorer_signature(model: str | None = None, num_layers: int | None = None) -> dict:
    """What to record beside the scores: encoder, layer and library version."""
    import bert_score

    model = model or default_model()
    return {
        "bertscore_model": model,
        "bertscore_layers": resolve_layers(model, num_layers),
        # the distribution's version: bert_score.__version__ stayed "0.3.12" in the 0.3.13 release
        "bertscore_version": _distribution_version("bert-score", getattr(bert_score, "__version__", "unknown")),
        "idf": False,
        "rescale_with_baseline": False,
    }
