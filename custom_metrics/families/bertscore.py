"""BERTScore precision / recall / F1 with one loaded encoder per (model, layer), batched.

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
(model, layer) and kept in the process's bounded model cache
(:mod:`custom_metrics.model_cache`, freed after scoring; ``bert_score.score()`` reloads it on every
call, which is what makes per-document scoring slow); each distinct sentence is
encoded once, in batches sorted by exact token length (least padding) and, on the
CPU, of at most ~1024 padded tokens (:data:`CPU_BATCH_TOKENS`: the activations stay in
the CPU caches, 15-20% faster on summaries, 2x on long texts); and empty
strings are handled (``bert-score`` crashes on them with current ``transformers``).
Agreement with ``bert_score.BERTScorer`` is tested to 1e-5.

Default encoder: the library's English default (``roberta-large``, layer 17). A local
directory or another hub id may be given; the layer then defaults to the library's
table entry, else the encoder's last layer. Empty predictions or references score 0.
The encoder runs on the scorers' device (setting ``scorer_device``, :mod:`custom_metrics.devices`).

Reference cache: :mod:`custom_metrics.reference_cache` keeps the references' embeddings
on disk across runs (setting ``score_cache_dir``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from custom_metrics.registry import Batch, Context, Family, Key, model_error
from custom_metrics.setting import Setting, as_int

log = logging.getLogger(__name__)

DEFAULT_LANG = "en"
#: the scientific encoder of the ``bertscore_sci`` family (the medqsum paper's SciBERT)
DEFAULT_SCI_BERTSCORE_MODEL = "allenai/scibert_scivocab_uncased"

#: on the CPU, padded tokens per encoder batch at most (512 per torch thread when that is
#: more, :func:`cpu_batch_tokens`): the activations of small batches stay in the CPU caches.
#: MiniLM at 1 and 2 threads: 15-20% faster than 64 texts of ~60 tokens, 2x faster than
#: 60 texts of ~290 tokens; 512 to 1536 were within 5% of each other (more threads: not measured)
CPU_BATCH_TOKENS = 1024


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


def default_device() -> str:
    """The scorers' device (:func:`custom_metrics.devices.current`, setting ``scorer_device``):
    by default the first GPU no sharded model occupies, else ``cpu``."""
    from custom_metrics import devices

    return devices.current()


class Encoder:
    """A loaded, layer-truncated encoder that embeds sentences in length-sorted batches."""

    def __init__(self, model: str, num_layers: int, device: str | None = None) -> None:
        from bert_score.utils import get_model, get_tokenizer

        self.model_name, self.num_layers = model, num_layers
        self.device = device or default_device()
        self.tokenizer = get_tokenizer(model, use_fast=False)
        self.model = get_model(model, num_layers).to(self.device).eval()
        special = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        self.special_ids = {i for i in special if i is not None}
        pad = self.tokenizer.pad_token_id
        self.pad_id = 0 if pad is None else pad
        self.last_truncated = 0
        self._identity: dict | None | bool = False  # False: not computed yet
        #: padded tokens per batch at most; None: ``batch_size`` texts whatever their length;
        #: "auto": :func:`cpu_batch_tokens` on the CPU, None on a GPU
        self.batch_tokens: int | None | str = "auto"

    def token_ids(self, sentence: str) -> list[int]:
        from bert_score.utils import sent_encode

        return sent_encode(self.tokenizer, sentence)

    def identity(self) -> dict | None:
        """What decides this encoder's embeddings (the reference cache's key); None when the
        weights cannot be identified (then nothing is cached)."""
        if self._identity is False:
            import torch

            from custom_metrics.reference_cache import CACHE_FORMAT, weights_identity

            weights = weights_identity(self.model_name)
            self._identity = None if weights is None else {
                "format": CACHE_FORMAT, "model": self.model_name, "weights": weights,
                "layers": self.num_layers, "max_length": str(self.tokenizer.model_max_length),
                "tokenizer": type(self.tokenizer).__name__, "device": torch.device(self.device).type,
                "dtype": str(next(self.model.parameters()).dtype),
                "versions": {name: _distribution_version(name, "unknown")
                             for name in ("bert-score", "transformers", "torch")},
            }
        return self._identity  # type: ignore[return-value]

    def token_budget(self) -> int | None:
        """Padded tokens per batch at most (None: no cap), :attr:`batch_tokens` resolved."""
        import torch

        if self.batch_tokens == "auto":
            return cpu_batch_tokens() if torch.device(self.device).type == "cpu" else None
        return self.batch_tokens  # type: ignore[return-value]

    def embed_groups(self, groups: Sequence[Sequence[str]], batch_size: int = 64, *,
                     progress: bool | None = False, desc: str = "BERTScore") -> dict[str, tuple]:
        """sentence -> (normalised embeddings [n, d] float32 on the CPU, non-special mask [n],
        truncated) for each distinct sentence; each group is batched on its own (sorted by
        token length), so a sentence's batch-mates do not depend on the other groups.

        ``progress``: a bar on stderr advancing per encoded sentence (None: ``$DOMSUM_PROGRESS``).
        """
        import torch

        from custom_metrics.progress import bar

        seen: set[str] = set()
        ids: dict[str, list[int]] = {}
        orders = []
        for group in groups:
            uniq = [s for s in dict.fromkeys(group) if s not in seen]
            seen.update(uniq)
            ids.update((s, self.token_ids(s)) for s in uniq)
            orders.append(sorted(uniq, key=lambda s: len(ids[s])))
        # bert-score cuts every input at the tokenizer's limit (512 for BERT/RoBERTa); an
        # input that fills it was cut, and its tail does not count towards the score
        limit = self.tokenizer.model_max_length
        self.last_truncated = sum(len(v) >= limit for v in ids.values())
        out: dict[str, tuple] = {}
        budget = self.token_budget()
        with torch.inference_mode(), bar(len(ids), desc, unit="text", enabled=progress) as shown:
            for order in orders:
                for batch in _batches(order, [len(ids[s]) for s in order], batch_size, budget):
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
                        out[s] = (emb[k, :n], keep, n >= limit)
                    shown.update(len(batch))
        return out

    def embed(self, sentences: Sequence[str], batch_size: int = 64, *, progress: bool | None = False,
              desc: str = "BERTScore") -> dict[str, Any]:
        """sentence -> (normalised embeddings [n, d], non-special mask [n]) for each distinct one."""
        got = self.embed_groups([sentences], batch_size, progress=progress, desc=desc)
        return {s: (e, k) for s, (e, k, _) in got.items()}


def cpu_batch_tokens() -> int:
    """The CPU batch budget in padded tokens: :data:`CPU_BATCH_TOKENS`, or 512 per torch thread."""
    import torch

    return max(CPU_BATCH_TOKENS, 512 * torch.get_num_threads())


def _batches(order: Sequence[str], lengths: Sequence[int], batch_size: int,
             budget: int | None) -> Iterable[list[str]]:
    """Consecutive runs of ``order`` (sorted by ascending length): at most ``batch_size``
    texts, and at most ``budget`` padded tokens (width x texts) when a budget is set."""
    start = 0
    while start < len(order):
        end = min(start + max(1, batch_size), len(order))
        if budget is not None:
            # lengths ascend, so the last text sets the width; always at least one text
            while end - start > 1 and lengths[end - 1] * (end - start) > budget:
                end -= 1
        yield list(order[start:end])
        start = end


def get_scorer(model: str | None = None, num_layers: int | None = None) -> Encoder:
    """The encoder for (model, layer) on the scorers' device from the process's model cache
    (key ``("bertscore", model, layer, device)``); loaded on first use."""
    from custom_metrics import model_cache

    model = model or default_model()
    layers = resolve_layers(model, num_layers)
    device = default_device()
    return model_cache.get(("bertscore", model, layers, device), lambda: Encoder(model, layers, device))


# =========================================================================== scoring


def _greedy(cand: Any, ref: Any) -> tuple[float, float, float]:
    x, xkeep, y, ykeep = cand[0], cand[1], ref[0], ref[1]
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
    cache_dir: Any = None,
) -> list[tuple[float, float, float]]:
    """(P, R, F1) for every pair; empty sides give (0, 0, 0).

    ``report``, when given, receives ``truncated_inputs``: how many distinct texts
    filled the encoder's input limit and were cut (bert-score's own behaviour), and
    ``reference_cache_hits`` / ``reference_cache_stored``: distinct references read from
    and written to the reference cache.
    ``progress``: a bar on stderr per encoded text (None: ``$DOMSUM_PROGRESS``); off by
    default for library calls, on through the metric registry.
    ``cache_dir``: the reference cache's folder (:func:`resolve_cache_dir`: None means
    ``$DOMSUM_SCORE_CACHE``, else ``~/.cache/domsum/scores``; ``"off"`` disables it).
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
    from custom_metrics.reference_cache import ReferenceCache, warn_once

    enc = get_scorer(model, num_layers)
    cands = [predictions[i].strip() for i in keep]
    refs = [references[i].strip() for i in keep]
    uniq_refs = list(dict.fromkeys(refs))
    emb: dict[str, tuple] = {}
    try:  # whatever goes wrong with the cache, scoring goes on without it
        cache = ReferenceCache.for_encoder(cache_dir, enc)
        if cache is not None:
            emb = cache.load(uniq_refs)
    except Exception as exc:  # noqa: BLE001
        warn_once("open", "BERTScore reference cache unusable (%s: %s); scoring without it",
                   type(exc).__name__, exc)
        cache, emb = None, {}
    todo_refs = [r for r in uniq_refs if r not in emb]
    # references first, in batches of their own: a reference's numbers do not depend on
    # the candidates it was scored with, so cached and computed references agree
    computed = enc.embed_groups([todo_refs, [c for c in cands if c not in emb]], batch_size=batch_size,
                                progress=progress, desc=desc)
    emb.update(computed)
    if cache is not None and todo_refs:
        try:
            cache.store({r: computed[r] for r in todo_refs})
        except Exception as exc:  # noqa: BLE001 - OSError is handled inside; anything else: no cache
            warn_once("store", "BERTScore reference cache: storing failed (%s: %s); scores are unaffected",
                       type(exc).__name__, exc)
    if report is not None:
        cut = sum(bool(emb[t][2]) for t in set(cands).union(uniq_refs))
        report["truncated_inputs"] = report.get("truncated_inputs", 0) + cut
        report["reference_cache_hits"] = report.get("reference_cache_hits", 0) + len(uniq_refs) - len(todo_refs)
        stored = cache.stored if cache is not None else 0
        report["reference_cache_stored"] = report.get("reference_cache_stored", 0) + stored
    for i, c, r in zip(keep, cands, refs):
        out[i] = _greedy(emb[c], emb[r])
    return out


def bertscore(
    predictions: Sequence[str],
    references: Sequence[str],
    model: str | None = None,
    num_layers: int | None = None,
    batch_size: int = 64,
    *,
    cache_dir: Any = None,
) -> dict[str, float]:
    """Corpus means: keys ``bertscore_p``, ``bertscore_r``, ``bertscore_f1`` (``cache_dir``: as
    :func:`bertscore_per_document`)."""
    per = bertscore_per_document(predictions, references, model, num_layers, batch_size, cache_dir=cache_dir)
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


# =========================================================================== the family records


def _bertscore_model(ctx: Context) -> str:
    return ctx.settings.get("bertscore_model") or default_model()


def _bertscore_check(ctx: Context) -> None:
    model = _bertscore_model(ctx)
    try:
        get_scorer(model, ctx.settings.get("bertscore_layers"))
    except Exception as exc:  # noqa: BLE001 - any load failure means: not available
        raise model_error("BERTScore", model, "bertscore_model", "DOMSUM_BERTSCORE_MODEL", exc) from exc


def _bertscore_describe(ctx: Context) -> dict[str, Any]:
    sig = scorer_signature(_bertscore_model(ctx), ctx.settings.get("bertscore_layers"))
    return {"bertscore_model_used": sig["bertscore_model"], "bertscore_layers_used": sig["bertscore_layers"],
            "bertscore_version": sig["bertscore_version"], "bertscore_idf": sig["idf"],
            "bertscore_rescale_with_baseline": sig["rescale_with_baseline"]}


def _bertscore_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.hf_models import ModelUnavailable, unavailable_message

    report: dict[str, int] = {}
    model = _bertscore_model(ctx)
    try:
        per = bertscore_per_document(batch.predictions, batch.references, model=model,
                                     num_layers=ctx.settings.get("bertscore_layers"),
                                     batch_size=ctx.settings.get("bertscore_batch_size") or 64, report=report,
                                     progress=ctx.progress, desc=ctx.bar_label("BERTScore"),
                                     cache_dir=ctx.settings.get("score_cache_dir"))
    except (OSError, ValueError) as exc:  # the encoder cannot be loaded
        raise ModelUnavailable(unavailable_message("bertscore", model, "bertscore_model",
                                                   "DOMSUM_BERTSCORE_MODEL", exc)) from exc
    cut = report.get("truncated_inputs", 0)
    ctx.record["bertscore_truncated_inputs"] = cut
    # distinct references read from / written to the reference cache (setting score_cache_dir)
    ctx.record["bertscore_reference_cache"] = {"hits": report.get("reference_cache_hits", 0),
                                               "stored": report.get("reference_cache_stored", 0)}
    if cut:
        log.warning("BERTScore: %d input text(s) reached the encoder's limit and were cut; their tails are "
                    "not scored", cut)
    return {"bertscore_p": [x[0] for x in per], "bertscore_r": [x[1] for x in per],
            "bertscore_f1": [x[2] for x in per]}


BERTSCORE = Family(
    name="bertscore",
    keys=(Key("bertscore_p", description="BERTScore precision", display="BERTScore P", scale=100.0),
          Key("bertscore_r", description="BERTScore recall", display="BERTScore R", scale=100.0),
          Key("bertscore_f1", description="BERTScore F1", display="BERTScore", scale=100.0)),
    score=_bertscore_score,
    description="General-domain encoder (roberta-large by default). Greedy cosine matching of contextual embeddings, no idf, no baseline rescaling.",
    source="custom_metrics.families.bertscore (agrees with bert_score.BERTScorer to 1e-5)",
    needs=("encoder",),
    settings=("bertscore_model", "bertscore_layers", "bertscore_batch_size", "score_cache_dir"),
    recorded={"bertscore_model_used": "bertscore_model", "bertscore_layers_used": "bertscore_layers"},
    check=_bertscore_check,
    describe=_bertscore_describe,
    model_setting="bertscore_model",
    default_model=default_model,
)




def _sci_bertscore_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.hf_models import ModelUnavailable, unavailable_message

    model = BERTSCORE_SCI.model(ctx)
    try:
        per = bertscore_per_document(batch.predictions, batch.references, model=model,
                                     num_layers=ctx.settings.get("sci_bertscore_layers"),
                                     batch_size=ctx.settings.get("metric_batch_size") or 16)
    except (OSError, ValueError) as exc:  # the encoder cannot be loaded
        raise ModelUnavailable(unavailable_message("bertscore_sci", model, "sci_bertscore_model",
                                                   "DOMSUM_SCI_BERTSCORE_MODEL", exc)) from exc
    return {f"bertscore_sci_{s}": [float(x[i]) for x in per] for i, s in enumerate(("p", "r", "f1"))}


BERTSCORE_SCI = Family(
    name="bertscore_sci",
    keys=(Key("bertscore_sci_p", description="BERTScore precision, scientific encoder",
              display="BERTScore (SciBERT) P"),
          Key("bertscore_sci_r", description="BERTScore recall, scientific encoder",
              display="BERTScore (SciBERT) R"),
          Key("bertscore_sci_f1", description="BERTScore F1, scientific encoder", display="BERTScore (SciBERT)")),
    score=_sci_bertscore_score,
    description="BERTScore with a scientific encoder (SciBERT by default; setting sci_bertscore_model), "
                "beside the general-domain bertscore_* keys: the medqsum paper reports both.",
    source="custom_metrics.families.bertscore",
    needs=("model",),
    settings=("sci_bertscore_model", "sci_bertscore_layers", "metric_batch_size"),
    model_setting="sci_bertscore_model",
    default_model=lambda: DEFAULT_SCI_BERTSCORE_MODEL,
    optional=True,
)

#: the settings the two families read, placed on the settings page beside the scorer rows
SETTING_ROWS = (
    Setting("bertscore_model", "DOMSUM_BERTSCORE_MODEL", str, None,
            "BERTScore encoder (hub id or local dir); unset = bert-score's English default (roberta-large).",
            "scorers", before="scorer_device",
            flag="encoder (default: the one a samples file's run recorded, else DOMSUM_BERTSCORE_MODEL, else "
                 "roberta-large)"),
    Setting("bertscore_layers", "DOMSUM_BERTSCORE_LAYERS", as_int, None,
            "BERTScore layer; unset = bert-score's tuned layer for the model.", "scorers", low=1,
            after="bertscore_model", flag=""),
    Setting("bertscore_batch_size", "DOMSUM_BERTSCORE_BATCH_SIZE", as_int, 64, "BERTScore batch size.", "scorers",
            low=1, after="bertscore_layers", flag="default 64"),
    Setting("sci_bertscore_model", "DOMSUM_SCI_BERTSCORE_MODEL", str, DEFAULT_SCI_BERTSCORE_MODEL,
            "medqsum: scientific BERTScore encoder.", "scorers", after="vocab_dir"),
    Setting("sci_bertscore_layers", "DOMSUM_SCI_BERTSCORE_LAYERS", as_int, None,
            "medqsum: scientific BERTScore layer.", "scorers", low=1, after="sci_bertscore_model"),
)
METRIC_FAMILIES = (BERTSCORE, BERTSCORE_SCI)
