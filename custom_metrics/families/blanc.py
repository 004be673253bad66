"""BLANC-help and BLANC-tune: reference-free summary quality from masked-LM help.

Method (Vasilyev, Dharnidharka & Bohannon, 2020, "Fill in the BLANC: Human-free
quality estimation of document summaries"; our own code over ``transformers``'
``AutoModelForMaskedLM``, default ``bert-base-uncased``, configurable). Settings are
the paper's: gap 6 (the ``blanc`` package, v0.3.4, defaults to gap 2 and notes that
gap 6 reproduces the paper; ``BlancParams(gap=2)`` gives the package's choice), the
package's token-length thresholds, filler and 10 tuning epochs at 5e-5. Not checked
numerically against the package, whose tuning masks randomly (p 0.15, batch 1),
where ours masks evenly in batches of 24:

The SOURCE text is split into sentences (at ``.``, ``?``, ``!`` followed by space);
each sentence is a unit (a sentence longer than the room left in the model's window
is cut into pieces). For each unit and each offset o in 0..gap-1 (gap = 6), the
tokens at positions i with i mod gap = o are masked if they are *large enough*:
with the MLM's own tokenizer, a token that is a whole word needs >= 4 characters
(``min_token_length_normal``), the first piece of a multi-piece word >= 2
(``min_token_length_lead``), a continuation piece >= 100, i.e. never
(``min_token_length_followup``); markers ``##``, ``Ġ``, ``▁`` are not counted.
Every masked token is predicted (argmax) twice, and counted in S_bh (b = base
prediction correct, h = helped prediction correct):

- BLANC-help: helped input ``[CLS] summary [SEP] masked unit [SEP]``; base input the
  same with every summary token replaced by the filler ``.`` (same length).
- BLANC-tune: both inputs are ``[CLS] masked unit [SEP]``; base = the MLM as is,
  helped = a copy of the MLM fine-tuned on the summary alone: ``tune_epochs`` (10)
  epochs over the ``gap`` evenly masked copies of the summary (offset o masks the
  large-enough tokens at i mod gap = o), AdamW, learning rate 5e-5, batch 24, seeded.
  The copy is restored from the original weights before each summary.

    BLANC = (S_01 - S_10) / (S_00 + S_01 + S_10 + S_11)

in [-1, 1], per (summary, source) pair; 0 when the source has no maskable token.
Corpus value: the mean over pairs. Higher is better. The summary is cut to at most
half the model's window. Inference is batched (length-sorted, padded, attention
masks) across all pairs.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from custom_metrics.registry import Batch, Context, Family, Key, stripped
from custom_metrics.setting import Setting, as_int

DEFAULT_MODEL = "bert-base-uncased"
FILLER = "."
_SENT_RE = re.compile(r"(?<=[.?!])\s+")


@dataclass(frozen=True)
class BlancParams:
    gap: int = 6
    min_token_length_normal: int = 4
    min_token_length_lead: int = 2
    min_token_length_followup: int = 100
    batch_size: int = 64
    tune_epochs: int = 10
    tune_batch_size: int = 24
    tune_lr: float = 5e-5
    seed: int = 0


def split_sentences(text: str) -> list[str]:
    return [s for s in (x.strip() for x in _SENT_RE.split(text or "")) if s]


def _piece_len(piece: str) -> int:
    for mark in ("##", "Ġ", "▁"):
        if piece.startswith(mark):
            piece = piece[len(mark):]
    return len(piece)


class _Tokens:
    """Token ids of a text and which positions are large enough to mask."""

    def __init__(self, tok: Any, text: str, params: BlancParams) -> None:
        enc = tok(text, add_special_tokens=False)
        self.ids: list[int] = list(enc["input_ids"])
        pieces = tok.convert_ids_to_tokens(self.ids)
        try:
            words = enc.word_ids()
        except (ValueError, AttributeError):  # slow tokenizer: WordPiece markers
            words, w = [], -1
            for p in pieces:
                if not p.startswith("##"):
                    w += 1
                words.append(w)
        self.ok: list[bool] = []
        for i, p in enumerate(pieces):
            first = i == 0 or words[i] is None or words[i] != words[i - 1]
            multi = i + 1 < len(pieces) and words[i] is not None and words[i + 1] == words[i]
            if not first:
                need = params.min_token_length_followup
            elif multi:
                need = params.min_token_length_lead
            else:
                need = params.min_token_length_normal
            self.ok.append(_piece_len(p) >= need)


def _units(tok: Any, source: str, room: int, params: BlancParams) -> list[_Tokens]:
    out = []
    for sent in split_sentences(source):
        t = _Tokens(tok, sent, params)
        for b in range(0, len(t.ids), max(1, room)):
            piece = copy.copy(t)
            piece.ids, piece.ok = t.ids[b : b + room], t.ok[b : b + room]
            if piece.ids:
                out.append(piece)
    return out


def _masked(unit: _Tokens, offset: int, gap: int, mask_id: int) -> tuple[list[int], list[int]]:
    ids, pos = list(unit.ids), []
    for i in range(len(ids)):
        if i % gap == offset and unit.ok[i]:
            ids[i] = mask_id
            pos.append(i)
    return ids, pos


def _predict(model: Any, inputs: list[list[int]], positions: list[list[int]], pad_id: int,
             batch_size: int) -> list[list[int]]:
    """Argmax token ids at the given positions of each input (length-sorted batches)."""
    import torch

    from custom_metrics.hf_models import right_pad

    device = next(model.parameters()).device
    out: list[list[int]] = [[] for _ in inputs]
    order = sorted(range(len(inputs)), key=lambda i: len(inputs[i]))
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            batch = order[b : b + batch_size]
            x, att = right_pad([inputs[i] for i in batch], pad_id)
            x, att = x.to(device), att.to(device)
            head = _head(model)
            if head is None:
                logits = model(input_ids=x, attention_mask=att).logits
                for k, i in enumerate(batch):
                    if positions[i]:
                        out[i] = logits[k, positions[i]].argmax(-1).tolist()
                continue
            # the vocabulary projection only at the masked positions (most of the cost
            # of a small MLM is the projection of every position onto the vocabulary)
            hidden = model.base_model(input_ids=x, attention_mask=att)[0]
            rows = [k for k, i in enumerate(batch) for _ in positions[i]]
            cols = [p for i in batch for p in positions[i]]
            if not rows:
                continue
            pred = head(hidden[rows, cols]).argmax(-1).tolist()
            j = 0
            for i in batch:
                out[i] = pred[j : j + len(positions[i])]
                j += len(positions[i])
    return out


def _head(model: Any) -> Any:
    """The MLM head of BERT-like (``cls``) and RoBERTa-like (``lm_head``) models, else None."""
    if not hasattr(model, "base_model") or model.base_model is model:
        return None
    for name in ("cls", "lm_head"):
        head = getattr(model, name, None)
        if head is not None:
            return head
    return None


def _blanc_value(truth: list[int], base: list[int], helped: list[int]) -> tuple[int, int, int]:
    s01 = sum(1 for t, b, h in zip(truth, base, helped) if b != t and h == t)
    s10 = sum(1 for t, b, h in zip(truth, base, helped) if b == t and h != t)
    return s01, s10, len(truth)


def _setup(model: str | None):
    from custom_metrics.hf_models import context_length, load_model

    tok, mlm = load_model("masked", model or DEFAULT_MODEL, metric="blanc", key="blanc_model",
                          env="DOMSUM_BLANC_MODEL")
    if tok.mask_token_id is None:
        from custom_metrics.hf_models import ModelUnavailable

        raise ModelUnavailable(f"blanc: tokenizer of {model!r} has no mask token; give a masked LM")
    window = min(context_length(mlm.config) or 512, 512)
    return tok, mlm, window


def _special(tok: Any) -> tuple[int, int, int]:
    cls = tok.cls_token_id if tok.cls_token_id is not None else tok.bos_token_id
    sep = tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    return cls, sep, pad


def blanc_help_per_document(summaries: Sequence[str], sources: Sequence[str], model: str | None = None,
                            params: BlancParams = BlancParams()) -> list[float]:
    """BLANC-help of each (summary, source) pair."""
    if len(summaries) != len(sources):
        raise ValueError(f"blanc: {len(summaries)} summaries but {len(sources)} sources")
    tok, mlm, window = _setup(model)
    cls, sep, pad = _special(tok)
    filler_id = tok.convert_tokens_to_ids(FILLER)
    inputs, positions, truths, owner = [], [], [], []
    for d, (summ, src) in enumerate(zip(summaries, sources)):
        s_ids = tok((summ or "").strip(), add_special_tokens=False)["input_ids"][: window // 2]
        room = window - len(s_ids) - 3
        for unit in _units(tok, src or "", room, params):
            for o in range(params.gap):
                ids, pos = _masked(unit, o, params.gap, tok.mask_token_id)
                if not pos:
                    continue
                shift = 2 + len(s_ids)
                for lead in (s_ids, [filler_id] * len(s_ids)):
                    inputs.append([cls] + lead + [sep] + ids + [sep])
                    positions.append([p + shift for p in pos])
                truths.append([unit.ids[p] for p in pos])
                owner.append(d)
    preds = _predict(mlm, inputs, positions, pad, params.batch_size)
    counts = [[0, 0, 0] for _ in summaries]
    for k, d in enumerate(owner):
        s01, s10, n = _blanc_value(truths[k], preds[2 * k + 1], preds[2 * k])
        counts[d][0] += s01
        counts[d][1] += s10
        counts[d][2] += n
    return [(a - b) / n if n else 0.0 for a, b, n in counts]


def _source_inputs(tok: Any, sources: Sequence[str], window: int, params: BlancParams):
    cls, sep, _ = _special(tok)
    per_doc: list[tuple[list[list[int]], list[list[int]], list[list[int]]]] = []
    for src in sources:
        inputs, positions, truths = [], [], []
        for unit in _units(tok, src or "", window - 2, params):
            for o in range(params.gap):
                ids, pos = _masked(unit, o, params.gap, tok.mask_token_id)
                if pos:
                    inputs.append([cls] + ids + [sep])
                    positions.append([p + 1 for p in pos])
                    truths.append([unit.ids[p] for p in pos])
        per_doc.append((inputs, positions, truths))
    return per_doc


def _tune(work: Any, state: dict, tok: Any, summary: str, window: int, params: BlancParams) -> None:
    """Restore ``work`` to the original weights and fine-tune it on the summary."""
    import random

    import torch

    work.load_state_dict(state)
    cls, sep, pad = _special(tok)
    unit = _Tokens(tok, summary, params)
    unit.ids, unit.ok = unit.ids[: window - 2], unit.ok[: window - 2]
    examples = []
    for o in range(params.gap):
        ids, pos = _masked(unit, o, params.gap, tok.mask_token_id)
        if pos:
            labels = [-100] * (len(ids) + 2)
            for p in pos:
                labels[p + 1] = unit.ids[p]
            examples.append(([cls] + ids + [sep], labels))
    if not examples:
        return
    device = next(work.parameters()).device
    torch.manual_seed(params.seed)
    rng = random.Random(params.seed)
    opt = torch.optim.AdamW(work.parameters(), lr=params.tune_lr)
    work.train()
    for _ in range(params.tune_epochs):
        rng.shuffle(examples)
        for b in range(0, len(examples), params.tune_batch_size):
            batch = examples[b : b + params.tune_batch_size]
            width = max(len(x) for x, _ in batch)
            x = torch.full((len(batch), width), pad, dtype=torch.long)
            y = torch.full((len(batch), width), -100, dtype=torch.long)
            att = torch.zeros((len(batch), width), dtype=torch.long)
            for k, (ids, labels) in enumerate(batch):
                x[k, : len(ids)] = torch.tensor(ids)
                y[k, : len(ids)] = torch.tensor(labels)
                att[k, : len(ids)] = 1
            x, att, y = x.to(device), att.to(device), y.to(device)
            head = _head(work)
            if head is None:
                loss = work(input_ids=x, attention_mask=att, labels=y).loss
            else:  # the same mean cross-entropy, projecting only the masked positions
                sel = y != -100
                hidden = work.base_model(input_ids=x, attention_mask=att)[0]
                loss = torch.nn.functional.cross_entropy(head(hidden[sel]), y[sel])
            opt.zero_grad()
            loss.backward()
            opt.step()
    work.eval()


def blanc_tune_per_document(summaries: Sequence[str], sources: Sequence[str], model: str | None = None,
                            params: BlancParams = BlancParams()) -> list[float]:
    """BLANC-tune of each (summary, source) pair (one short fine-tuning per summary)."""
    import torch

    if len(summaries) != len(sources):
        raise ValueError(f"blanc: {len(summaries)} summaries but {len(sources)} sources")
    tok, mlm, window = _setup(model)
    _, _, pad = _special(tok)
    per_doc = _source_inputs(tok, sources, window, params)
    # base predictions: every distinct source once, in one batched pass
    flat_in, flat_pos, spans, start = [], [], [], 0
    for inputs, positions, _ in per_doc:
        flat_in.extend(inputs)
        flat_pos.extend(positions)
        spans.append((start, start + len(inputs)))
        start += len(inputs)
    base_flat = _predict(mlm, flat_in, flat_pos, pad, params.batch_size)
    state = {k: v.detach().clone() for k, v in mlm.state_dict().items()}
    work = copy.deepcopy(mlm)
    out = []
    try:
        for d, summ in enumerate(summaries):
            inputs, positions, truths = per_doc[d]
            if not inputs or not (summ or "").strip():
                out.append(0.0)
                continue
            with torch.enable_grad():
                _tune(work, state, tok, summ.strip(), window, params)
            tuned = _predict(work, inputs, positions, pad, params.batch_size)
            base = base_flat[spans[d][0] : spans[d][1]]
            s01 = s10 = n = 0
            for t, b, h in zip(truths, base, tuned):
                a, c, m = _blanc_value(t, b, h)
                s01, s10, n = s01 + a, s10 + c, n + m
            out.append((s01 - s10) / n if n else 0.0)
    finally:
        del work
    return out


def blanc_scores(summaries: Sequence[str], sources: Sequence[str], model: str | None = None,
                 params: BlancParams = BlancParams(), tune: bool = True) -> dict:
    """``{"blanc_help": mean, "blanc_tune": mean}`` (tune left out when ``tune=False``)."""
    help_ = blanc_help_per_document(summaries, sources, model, params)
    out = {"blanc_help": sum(help_) / len(help_) if help_ else 0.0}
    if tune:
        t = blanc_tune_per_document(summaries, sources, model, params)
        out["blanc_tune"] = sum(t) / len(t) if t else 0.0
    return out


# =========================================================================== the family records


def _params(ctx: Context) -> BlancParams:
    epochs = ctx.settings.get("blanc_tune_epochs")
    return BlancParams(batch_size=max(int(ctx.settings.get("metric_batch_size") or 16), 16),
                       **({"tune_epochs": int(epochs)} if epochs not in (None, "") else {}))


def _sources(batch: Batch) -> list[str]:
    return ["" if s is None else str(s) for s in batch.documents]


def _help_score(batch: Batch, ctx: Context) -> dict[str, list]:
    return {"blanc_help": blanc_help_per_document(stripped(batch.predictions), _sources(batch),
                                                  BLANC_HELP.model(ctx), _params(ctx))}


def _tune_score(batch: Batch, ctx: Context) -> dict[str, list]:
    return {"blanc_tune": blanc_tune_per_document(stripped(batch.predictions), _sources(batch),
                                                  BLANC_TUNE.model(ctx), _params(ctx))}


_SETTINGS = ("blanc_model", "blanc_tune_epochs", "metric_batch_size")

BLANC_HELP = Family(
    name="blanc_help",
    keys=(Key("blanc_help", description="BLANC-help: how much the summary helps unmask the source",
              display="BLANC-help", unit="score"),),
    score=_help_score,
    description="BLANC-help, reference-free (reads the source document); -1..1.",
    source="custom_metrics.families.blanc (the BLANC release's algorithm)",
    needs=("model", "document"), settings=_SETTINGS, model_setting="blanc_model", default_model=lambda: DEFAULT_MODEL,
    optional=True,
)

BLANC_TUNE = Family(
    name="blanc_tune",
    keys=(Key("blanc_tune", description="BLANC-tune: unmasking gain after tuning on the summary",
              display="BLANC-tune", unit="score"),),
    score=_tune_score,
    description="BLANC-tune, reference-free (reads the source document); -1..1.",
    source="custom_metrics.families.blanc (the BLANC release's algorithm)",
    needs=("model", "document"), settings=_SETTINGS, model_setting="blanc_model", default_model=lambda: DEFAULT_MODEL,
    optional=True,
)

SETTING_ROWS = (
    Setting("blanc_model", "DOMSUM_BLANC_MODEL", str, DEFAULT_MODEL, "medqsum: BLANC masked LM.", "scorers",
            after="sci_bertscore_layers"),
    Setting("blanc_tune_epochs", "DOMSUM_BLANC_TUNE_EPOCHS", as_int, None, "medqsum: BLANC-tune epochs.", "scorers",
            low=0, after="blanc_model"),
)
METRIC_FAMILIES = (BLANC_HELP, BLANC_TUNE)
