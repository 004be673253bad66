"""Perplexity of each summary under a causal language model, batched.

Formula: for a summary with tokens t_1..t_n (the LM's own tokenizer, no special
tokens) scored after the model's BOS token (GPT-2: ``<|endoftext|>``; models
without one score t_2..t_n given t_1),

    PPL = exp( -1/N * sum_i log p(t_i | t_<i) )

N is the number of scored tokens, so the score is length-normalised (per token).
The corpus value ``perplexity`` is the mean of the per-summary perplexities; empty
summaries have no tokens and are left out (``perplexity_scored`` counts the rest).
Lower is better. Texts longer than the model's context are cut to it.

Source: the fluency measure of the biomedical question-summarization evaluation
study (Yuan et al., "Revisiting Automatic Question Summarization Evaluation in the
Biomedical Domain"), with GPT-2 (Radford et al., 2019) as the default LM
(configurable: any ``AutoModelForCausalLM`` id or local directory). Reference
computation: the ``transformers`` LM loss (mean token cross-entropy) per text,
which the tests compare against; batching uses right padding and attention masks,
so padded positions never enter the sum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from custom_metrics.registry import Batch, Context, Family, Key, stripped
from custom_metrics.setting import Setting

DEFAULT_MODEL = "gpt2"


def perplexity_per_text(texts: Sequence[str], model: str | None = None, batch_size: int = 16,
                        *, key: str | None = "ppl_model", env: str | None = "DOMSUM_PPL_MODEL") -> list[float]:
    """Per-text perplexity (``nan`` for texts with no scorable token)."""
    import torch

    from custom_metrics.hf_models import context_length, load_model, model_device, right_pad

    tok, lm = load_model("causal", model or DEFAULT_MODEL, metric="perplexity", key=key, env=env)
    device = model_device(lm)
    limit = context_length(lm.config) or 1024
    bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    seqs: list[list[int]] = []
    for t in texts:
        ids = tok((t or "").strip(), add_special_tokens=False)["input_ids"] if (t or "").strip() else []
        if ids and bos is not None:
            ids = [bos] + ids
        seqs.append(ids[:limit])
    out = [float("nan")] * len(seqs)
    order = sorted((i for i, s in enumerate(seqs) if len(s) >= 2), key=lambda i: len(seqs[i]))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            batch = order[b : b + batch_size]
            x, mask = right_pad([seqs[i] for i in batch], pad)
            logits = lm(input_ids=x.to(device), attention_mask=mask.to(device)).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1)
            target = x[:, 1:].to(device)
            nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            m = mask[:, 1:].to(device).float()
            mean_nll = (nll * m).sum(1) / m.sum(1)
            for k, i in enumerate(batch):
                out[i] = float(math.exp(float(mean_nll[k])))
    return out


def perplexity_scores(texts: Sequence[str], model: str | None = None, batch_size: int = 16) -> dict:
    """``{"perplexity": mean per-text PPL, "perplexity_scored": texts scored}``."""
    per = [v for v in perplexity_per_text(texts, model, batch_size) if not math.isnan(v)]
    return {"perplexity": sum(per) / len(per) if per else float("nan"), "perplexity_scored": len(per)}


# =========================================================================== the family record


def _perplexity_score(batch: Batch, ctx: Context) -> dict[str, list]:
    per = perplexity_per_text(stripped(batch.predictions), PERPLEXITY.model(ctx),
                              int(ctx.settings.get("metric_batch_size") or 16))
    ctx.details["perplexity_scored"] = sum(1 for v in per if not math.isnan(v))
    return {"perplexity": per}


PERPLEXITY = Family(
    name="perplexity",
    keys=(Key("perplexity", higher_is_better=False, aggregation="nanmean", display="Perplexity", unit="score",
              description="perplexity of the summary (>= 1); empty summaries have none"),),
    score=_perplexity_score,
    description="Perplexity of the summary under a causal LM (GPT-2 by default); lower is better.",
    source="custom_metrics.families.perplexity",
    needs=("model",), settings=("ppl_model", "metric_batch_size"), model_setting="ppl_model",
    default_model=lambda: DEFAULT_MODEL, optional=True,
)

SETTING_ROWS = (
    Setting("ppl_model", "DOMSUM_PPL_MODEL", str, DEFAULT_MODEL, "medqsum: perplexity language model.", "scorers",
            after="blanc_tune_epochs"),
)
METRIC_FAMILIES = (PERPLEXITY,)
