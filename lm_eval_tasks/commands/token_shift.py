"""``domsum token-shift``: token distribution shift (KL, shift rate) between two settings.

AdaptEval (Afzal et al. 2024, Section 4) measures how domain adaptation changes a
model's next-token distributions on the summaries it generates. Inputs: the
``--log_samples`` file of the *adapted* run (``samples_<task>_<date>.jsonl`` from
lm-eval 0.4.x: the prompt is ``arguments.gen_args_0.arg_0``, the generated summary
``resps[0][0]``), and two settings that read the same summary:

* ``--mode model`` (default), *model vs model*, same prompt: ``--base`` (e.g. the
  pre-trained 7B, optionally ``--base-peft``) vs ``--adapted`` (the fine-tuned or
  bigger model, or ``--adapted-peft`` on top of it; ``--adapted`` defaults to
  ``--base``, so ``--base B --adapted-peft LORA`` compares a model with its adapter,
  loading the weights once);
* ``--mode prompt``, *prompt vs prompt*, same model (``--model``, ``--peft``): the
  base prompt is the zero-shot one -- from a second samples file (``--base-samples``,
  matched by ``doc_id``) or rebuilt from the samples' few-shot prompt
  (``--rebuild-zero-shot``: the text before the first ``--turn-marker`` plus the last
  turn, i.e. the instruction and the query without the demonstrations, as the
  release does) -- and the adapted prompt is the samples' own (two-shot).

Method: teacher forcing. The summary is tokenized once and appended to each prompt's
tokens, so the summary tokens are identical in both settings (aligned by
construction); **one forward pass per model (or prompt) per document** over
prompt + summary gives the next-token distribution at every summary position
(logits at position ``t`` predict token ``t + 1``; only the summary positions are
projected to the vocabulary). The release instead re-runs the model on every prefix,
which ``scripts/bench_token_shift.py`` compares.

Per document and overall (see :mod:`custom_metrics.token_shift` for the formulas):
``kl`` = mean KL(base || adapted) in nats; ``shift_rate`` = % of positions whose
adapted top-1 token is not in the base top-3; ``marginal_rate`` (in the base top-3 but
not its top-1); ``unshifted_rate``; each also over domain-vocabulary positions
(``*_vocab``: the token begins a word of the domain vocabulary, found with the
tokenizer's offsets). Overall = mean over documents; ``pooled`` = over all positions.

    domsum token-shift --samples out/.../samples_adapteval_pubmed_<date>.jsonl \\
        --base meta-llama/Llama-2-7b-hf --adapted-peft out/lora_pubmed \\
        --dtype bfloat16 --out shift.json --csv shift.csv
    domsum token-shift --mode prompt --model meta-llama/Llama-2-7b-chat-hf \\
        --samples samples_adapteval_pubmed_2shot_<date>.jsonl --rebuild-zero-shot

The domain vocabulary: ``--vocabulary FILE``, else the task's (``--task`` or the task name in
the samples file name, looked up in the task catalogue for its benchmark and subset)
under ``--vocab-dir`` / ``$DOMSUM_VOCAB_DIR`` / ``~/.cache/domsum/vocab`` (built by
``domsum build-vocab``); ``--no-vocab`` skips
the vocabulary statistics. Models with different tokenizers cannot be compared
position by position: that is an error.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import logging
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from custom_metrics.token_shift import (
    SHIFTED,
    aggregate_shift,
    domain_word_mask,
    position_shift,
    summarize_shift,
)
from lm_eval_tasks.data.loader import json_lines

log = logging.getLogger("token_shift")

DEFAULT_TURN_MARKER = "Proceed to summarize the following text."
SUMMARY_SOURCES = ("generated", "filtered", "reference")
CSV_COLUMNS = (
    "doc_id", "prompt_tokens_base", "prompt_tokens_adapted", "summary_tokens", "truncated",
    "positions", "kl", "shift_rate", "marginal_rate", "unshifted_rate",
    "positions_vocab", "kl_vocab", "shift_rate_vocab", "marginal_rate_vocab",
    "unshifted_rate_vocab",
)
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


class SamplesError(ValueError):
    """A samples file that is not what lm-eval's ``--log_samples`` writes."""


class TokenizerMismatchError(ValueError):
    """The two settings tokenize differently, so positions cannot be compared."""


# --------------------------------------------------------------------------- samples


def _first_str(value: Any, what: str, where: str) -> str:
    """Descend nested lists (``resps`` is ``[[text]]``, ``filtered_resps`` ``[text]``)."""
    while isinstance(value, list):
        if not value:
            raise SamplesError(f"{where}: {what} is empty")
        value = value[0]
    if not isinstance(value, str):
        raise SamplesError(f"{where}: {what} is not a string ({type(value).__name__})")
    return value


def sample_prompt(sample: dict, where: str = "sample") -> str:
    """The prompt string of a generate_until sample.

    lm-eval 0.4.x serialises ``Instance.args`` = ``(context, gen_kwargs)`` as
    ``{"gen_args_0": {"arg_0": context, "arg_1": gen_kwargs}}`` (one ``gen_args_i``
    per request; summarization tasks make one); the in-memory form ``[[context,
    gen_kwargs]]`` is accepted too. With ``--apply_chat_template`` the context is
    already the rendered chat string.
    """
    args = sample.get("arguments")
    if isinstance(args, dict):
        first = args.get("gen_args_0")
        if not isinstance(first, dict) or "arg_0" not in first:
            raise SamplesError(f"{where}: arguments has no gen_args_0.arg_0 (keys: {sorted(args)})")
        return _first_str(first["arg_0"], "arguments.gen_args_0.arg_0", where)
    if isinstance(args, list) and args and isinstance(args[0], list) and args[0]:
        return _first_str(args[0][0], "arguments[0][0]", where)
    raise SamplesError(f"{where}: no prompt (field 'arguments' missing or malformed)")


def sample_summary(sample: dict, source: str = "generated", where: str = "sample") -> str:
    """The summary to read: ``generated`` (``resps``: the raw generation),
    ``filtered`` (``filtered_resps``: after the task's filters) or ``reference``
    (``doc["summary"]``, else ``target``)."""
    if source == "generated":
        if "resps" not in sample:
            raise SamplesError(f"{where}: no 'resps' field")
        return _first_str(sample["resps"], "resps", where)
    if source == "filtered":
        if "filtered_resps" not in sample:
            raise SamplesError(f"{where}: no 'filtered_resps' field")
        return _first_str(sample["filtered_resps"], "filtered_resps", where)
    if source == "reference":
        doc = sample.get("doc") or {}
        if isinstance(doc, dict) and isinstance(doc.get("summary"), str):
            return doc["summary"]
        if isinstance(sample.get("target"), str):
            return sample["target"]
        raise SamplesError(f"{where}: no doc.summary or target")
    raise ValueError(f"summary source must be one of {SUMMARY_SOURCES}, got {source!r}")


def iter_samples(path: str | Path, filter_name: str | None = None) -> Iterator[tuple[str, dict]]:
    """Stream ``(where, sample)`` from a samples JSONL, one per ``doc_id``.

    lm-eval writes one line per document and filter; the first line of each
    ``doc_id`` is used, or the lines of ``filter_name`` only.
    """
    path = Path(path)
    if not path.is_file():
        raise SamplesError(f"samples file not found: {path}")
    seen: set = set()
    for where, sample in json_lines(path, error=SamplesError):
        if not isinstance(sample, dict) or "doc_id" not in sample:
            raise SamplesError(f"{where}: not an lm-eval sample (no doc_id)")
        if filter_name is not None and sample.get("filter") != filter_name:
            continue
        key = json.dumps(sample["doc_id"])
        if key in seen:
            continue
        seen.add(key)
        yield f"{where} (doc_id {sample['doc_id']})", sample


def index_prompts(path: str | Path, filter_name: str | None = None) -> dict[str, tuple[str, str | None]]:
    """``doc_id -> (prompt, document)`` of a second samples file (the base prompts)."""
    out = {}
    for where, sample in iter_samples(path, filter_name):
        doc = sample.get("doc")
        document = doc.get("document") if isinstance(doc, dict) else None
        out[json.dumps(sample["doc_id"])] = (sample_prompt(sample, where), document)
    return out


def task_from_samples_name(path: str | Path) -> str | None:
    """``samples_adapteval_pubmed_2shot_2025-01-01T10-00-00.123.jsonl`` -> the task."""
    m = _SAMPLES_NAME.match(Path(path).name)
    return m.group("task") if m else None


def zero_shot_from_last_turn(prompt: str, marker: str = DEFAULT_TURN_MARKER) -> str:
    """Drop the demonstrations of a few-shot prompt: the text before the first
    ``marker`` (instruction, chat header) + the text from the last ``marker`` on
    (the query turn and anything after it, e.g. the assistant header)."""
    first = prompt.find(marker)
    if first < 0:
        raise SamplesError(f"turn marker {marker!r} not in the prompt; set --turn-marker")
    last = prompt.rfind(marker)
    return prompt[:first] + prompt[last:]


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelSpec:
    """A model: hub id or local path, optional PEFT adapter, optional tokenizer source."""

    path: str
    peft: str | None = None
    tokenizer: str | None = None

    def label(self) -> str:
        return self.path + (f" + {self.peft}" if self.peft else "")


def resolve_dtype(name: str, device: str) -> Any:
    import torch

    if name == "auto":
        if device.startswith("cuda") or device == "balanced":
            if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
                return torch.bfloat16
            return torch.float16 if torch.cuda.is_available() else torch.float32
        return torch.float32
    table = {"float32": torch.float32, "float": torch.float32, "bfloat16": torch.bfloat16,
             "float16": torch.float16, "half": torch.float16}
    if name not in table:
        raise ValueError(f"--dtype must be auto, float32, bfloat16 or float16; got {name!r}")
    return table[name]


def load_tokenizer(spec: ModelSpec, trust_remote_code: bool = False):
    """The tokenizer of ``spec``: ``spec.tokenizer``, else the adapter's directory when
    it has one (adapters trained with added tokens save it), else the model's."""
    from transformers import AutoTokenizer

    source = spec.tokenizer
    if source is None and spec.peft and (Path(spec.peft) / "tokenizer_config.json").is_file():
        source = spec.peft
    return AutoTokenizer.from_pretrained(source or spec.path, trust_remote_code=trust_remote_code)


def load_model(spec: ModelSpec, dtype: Any, device: str, trust_remote_code: bool = False,
               merge: bool = True):
    """A causal LM in eval mode; a PEFT adapter is applied (and merged when ``merge``)."""
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if device == "balanced":  # spread over the visible GPUs (accelerate)
        kwargs["device_map"] = "auto"
    model = AutoModelForCausalLM.from_pretrained(spec.path, **kwargs)
    if device != "balanced":
        model = model.to(device)
    if spec.peft:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, spec.peft)
        if merge:
            model = model.merge_and_unload()
    model.eval()
    return model


def check_same_tokenizer(tok_a, tok_b, name_a: str = "base", name_b: str = "adapted") -> None:
    """Raise :class:`TokenizerMismatchError` unless both map the same strings to ids."""
    if tok_a is tok_b:
        return
    va, vb = tok_a.get_vocab(), tok_b.get_vocab()
    if va != vb:
        diff = sorted(set(va.items()) ^ set(vb.items()), key=lambda kv: kv[1])[:3]
        raise TokenizerMismatchError(
            f"the {name_a} and {name_b} tokenizers differ ({len(va)} vs {len(vb)} tokens; "
            f"e.g. {diff}): token shift compares the two next-token distributions id by id "
            f"at the same summary positions, so both models must share one tokenizer "
            f"(same family and vocabulary). Pass --base-tokenizer/--adapted-tokenizer if "
            f"a checkpoint ships a different but equivalent copy."
        )


def has_bos_prefix(text: str, tok) -> bool:
    bos = getattr(tok, "bos_token", None)
    return bool(bos) and text.startswith(bos)


def encode_prompt(tok, prompt: str, add_bos: bool | None = None) -> list[int]:
    """Prompt ids as lm-eval's HF backend makes them: the tokenizer's default special
    tokens (BOS for Llama-style tokenizers) unless the prompt already starts with the
    BOS text (chat templates) or ``add_bos`` says otherwise."""
    if add_bos is None:
        kwargs = {"add_special_tokens": False} if has_bos_prefix(prompt, tok) else {}
    else:
        kwargs = {"add_special_tokens": add_bos}
    return list(tok(prompt, **kwargs)["input_ids"])


def encode_summary(tok, summary: str, need_offsets: bool = True) -> tuple[list[int], list[tuple[int, int]] | None]:
    """Summary ids (no special tokens) and their character offsets in ``summary``."""
    if not need_offsets:
        return list(tok(summary, add_special_tokens=False)["input_ids"]), None
    if not getattr(tok, "is_fast", False):
        raise TokenizerMismatchError(
            f"{type(tok).__name__} is a slow tokenizer without character offsets; "
            f"domain-vocabulary positions need a fast tokenizer (or pass --no-vocab)"
        )
    enc = tok(summary, add_special_tokens=False, return_offsets_mapping=True)
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def max_positions(model) -> int | None:
    cfg = getattr(model, "config", None)
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def fit_length(prompt_ids: list[int], summary_ids: list[int], max_len: int | None
               ) -> tuple[list[int], list[int], int]:
    """Left-truncate the prompt (as the harness does) so prompt + summary fit
    ``max_len``; the summary is cut only if it alone does not fit (1 prompt token
    kept). Returns the ids and the number of tokens dropped."""
    if max_len is None or len(prompt_ids) + len(summary_ids) <= max_len:
        return prompt_ids, summary_ids, 0
    dropped = 0
    if len(summary_ids) > max_len - 1:
        dropped += len(summary_ids) - (max_len - 1)
        summary_ids = summary_ids[: max_len - 1]
    keep = max_len - len(summary_ids)
    dropped += max(0, len(prompt_ids) - keep)
    return prompt_ids[-keep:], summary_ids, dropped


class Runner:
    """One setting's forward passes: a model, optionally with its adapter switched off."""

    def __init__(self, model, disable_adapter: bool = False) -> None:
        self.model = model
        self.disable_adapter = disable_adapter
        self._keep_kw: bool | None = None
        self.forward_passes = 0

    @property
    def device(self):
        return next(self.model.parameters()).device

    def _forward(self, ids, keep: int):
        import torch

        ctx = self.model.disable_adapter() if self.disable_adapter else contextlib.nullcontext()
        with torch.inference_mode(), ctx:
            self.forward_passes += 1
            kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False}
            if self._keep_kw is not False:
                try:
                    out = self.model(**kwargs, logits_to_keep=keep)
                    self._keep_kw = True
                    return out.logits
                except TypeError:  # a model class without logits_to_keep
                    if self._keep_kw:
                        raise
                    self._keep_kw = False
            return self.model(**kwargs).logits

    def summary_logits(self, prompt_ids: Sequence[int], summary_ids: Sequence[int]):
        """``[len(summary), vocab]`` logits predicting each summary token: ONE pass."""
        import torch

        if not prompt_ids:
            raise ValueError("empty prompt: the first summary token has no context")
        n = len(summary_ids)
        ids = torch.tensor([list(prompt_ids) + list(summary_ids)], device=self.device)
        logits = self._forward(ids, n + 1)  # only the last n + 1 positions are projected
        return logits[0, -(n + 1):-1] if n else logits[0, :0]

    def per_prefix_logits(self, prompt_ids: Sequence[int], summary_ids: Sequence[int]):
        """The same logits the release's way: one pass per summary prefix (slow)."""
        import torch

        rows = []
        for j in range(len(summary_ids)):
            ids = torch.tensor([list(prompt_ids) + list(summary_ids[:j])], device=self.device)
            rows.append(self._forward(ids, 1)[0, -1])
        return torch.stack(rows) if rows else None


def _align_vocab(base, adapted, n_tokens: int):
    """Same-width logits: models padded to different embedding sizes keep the
    tokenizer's ids only (softmax renormalised over them)."""
    if base.shape[-1] == adapted.shape[-1]:
        return base, adapted
    if min(base.shape[-1], adapted.shape[-1]) >= n_tokens:
        return base[..., :n_tokens], adapted[..., :n_tokens]
    raise TokenizerMismatchError(
        f"output vocabularies differ ({base.shape[-1]} vs {adapted.shape[-1]} logits) and the "
        f"tokenizer has {n_tokens} tokens: the models do not share a vocabulary"
    )


# --------------------------------------------------------------------------- run


@dataclass
class ShiftConfig:
    samples: str
    mode: str = "model"
    base: ModelSpec | None = None
    adapted: ModelSpec | None = None
    base_samples: str | None = None
    rebuild_zero_shot: bool = False
    turn_marker: str = DEFAULT_TURN_MARKER
    summary: str = "generated"
    filter: str | None = None
    vocab: str | None = None
    limit: int | None = None
    dtype: str = "auto"
    device: str = "auto"
    max_length: int | None = None
    add_bos: bool | None = None
    trust_remote_code: bool = False


def compute_shift(cfg: ShiftConfig, vocabulary: Sequence[str] | None = None,
                  csv_path: str | Path | None = None, progress: bool | None = False,
                  top_tokens: int = 20) -> dict[str, Any]:
    """Run the comparison; return ``{"config", "overall", "top_shifted_tokens",
    "documents"}``. Per-document rows are streamed to ``csv_path`` as they come."""
    import torch

    from custom_metrics.progress import track

    if cfg.mode not in ("model", "prompt"):
        raise ValueError(f"mode must be 'model' or 'prompt', got {cfg.mode!r}")
    device = cfg.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = resolve_dtype(cfg.dtype, device)
    base_spec = cfg.base
    if base_spec is None:
        raise ValueError("no model given")
    adapted_spec = cfg.adapted if cfg.mode == "model" else base_spec
    if adapted_spec is None:
        raise ValueError("no adapted model given")

    t_load = time.perf_counter()
    tok = load_tokenizer(base_spec, cfg.trust_remote_code)
    tok_adapted = tok
    if cfg.mode == "model" and adapted_spec != base_spec:
        tok_adapted = load_tokenizer(adapted_spec, cfg.trust_remote_code)
        check_same_tokenizer(tok, tok_adapted)
    if cfg.mode == "prompt":
        model = load_model(base_spec, dtype, device, cfg.trust_remote_code)
        base_run = adapted_run = Runner(model)
    elif (adapted_spec.path == base_spec.path and base_spec.peft is None
          and adapted_spec.peft is not None):
        # base vs base + adapter: load the weights once, switch the adapter off for base
        model = load_model(adapted_spec, dtype, device, cfg.trust_remote_code, merge=False)
        base_run, adapted_run = Runner(model, disable_adapter=True), Runner(model)
    else:
        base_run = Runner(load_model(base_spec, dtype, device, cfg.trust_remote_code))
        adapted_run = Runner(load_model(adapted_spec, dtype, device, cfg.trust_remote_code))
    load_s = time.perf_counter() - t_load
    limits = [x for x in (cfg.max_length, max_positions(base_run.model),
                          max_positions(adapted_run.model)) if x]
    max_len = min(limits) if limits else None
    n_tokens = len(tok)

    base_prompts = index_prompts(cfg.base_samples, cfg.filter) if cfg.base_samples else None
    if cfg.mode == "prompt" and base_prompts is None and not cfg.rebuild_zero_shot:
        raise ValueError("prompt mode needs --base-samples FILE or --rebuild-zero-shot")
    vocab = frozenset(vocabulary) if vocabulary else None

    documents: list[dict[str, Any]] = []
    shifted_tokens: Counter = Counter()
    csv_fh = open(csv_path, "w", newline="", encoding="utf-8") if csv_path else None
    writer = csv.DictWriter(csv_fh, fieldnames=CSV_COLUMNS, extrasaction="ignore") if csv_fh else None
    if writer:
        writer.writeheader()
    t0 = time.perf_counter()
    try:
        samples = iter_samples(cfg.samples, cfg.filter)
        for i, (where, sample) in enumerate(track(samples, "token shift", total=cfg.limit, enabled=progress)):
            if cfg.limit is not None and i >= cfg.limit:
                break
            adapted_prompt = sample_prompt(sample, where)
            summary = sample_summary(sample, cfg.summary, where)
            if cfg.mode == "prompt":
                if base_prompts is not None:
                    key = json.dumps(sample["doc_id"])
                    if key not in base_prompts:
                        raise SamplesError(f"{where}: doc_id not in --base-samples {cfg.base_samples}")
                    base_prompt, base_doc = base_prompts[key]
                    doc = sample.get("doc") if isinstance(sample.get("doc"), dict) else {}
                    if base_doc is not None and doc.get("document") not in (None, base_doc):
                        raise SamplesError(f"{where}: --base-samples has a different document "
                                           f"under this doc_id; the two runs must use the same data")
                else:
                    base_prompt = zero_shot_from_last_turn(adapted_prompt, cfg.turn_marker)
            else:
                base_prompt = adapted_prompt

            p_base = encode_prompt(tok, base_prompt, cfg.add_bos)
            p_adapted = p_base if base_prompt == adapted_prompt else encode_prompt(tok, adapted_prompt, cfg.add_bos)
            s_ids, offsets = encode_summary(tok, summary, need_offsets=vocab is not None)
            if tok_adapted is not tok:
                if (encode_prompt(tok_adapted, adapted_prompt, cfg.add_bos) != p_adapted
                        or encode_summary(tok_adapted, summary, False)[0] != s_ids):
                    raise TokenizerMismatchError(f"{where}: the two tokenizers encode this document differently")
            p_base, s_fit, cut_b = fit_length(p_base, s_ids, max_len)
            p_adapted, _, cut_a = fit_length(p_adapted, s_ids, max_len)
            offsets = offsets[: len(s_fit)] if offsets is not None else None
            if s_fit:
                lb = base_run.summary_logits(p_base, s_fit)
                la = adapted_run.summary_logits(p_adapted, s_fit)
                lb, la = _align_vocab(lb, la, n_tokens)
                kl, cat, top1 = position_shift(lb, la)
                shifted_tokens.update(top1[cat == SHIFTED].tolist())
            else:
                kl, cat = [], []
            mask = (domain_word_mask(summary, offsets, vocab) if vocab is not None and offsets is not None
                    else None)
            row = {"doc_id": sample["doc_id"], "prompt_tokens_base": len(p_base),
                   "prompt_tokens_adapted": len(p_adapted), "summary_tokens": len(s_fit),
                   "truncated": max(cut_a, cut_b)}
            row.update(summarize_shift(kl, cat, mask))
            documents.append(row)
            if writer:
                writer.writerow(row)
                csv_fh.flush()
    finally:
        if csv_fh:
            csv_fh.close()
    elapsed = time.perf_counter() - t0
    overall = aggregate_shift(documents)
    overall["seconds"] = elapsed
    overall["load_seconds"] = load_s
    overall["forward_passes"] = base_run.forward_passes + (
        adapted_run.forward_passes if adapted_run is not base_run else 0)
    config = asdict(cfg)
    config.update({"resolved_device": device, "resolved_dtype": str(dtype).replace("torch.", ""),
                   "max_length_used": max_len, "vocabulary_size": len(vocab) if vocab else None,
                   "base_label": base_spec.label() + (" [zero-shot prompt]" if cfg.mode == "prompt" else ""),
                   "adapted_label": adapted_spec.label() + (" [samples prompt]" if cfg.mode == "prompt" else "")})
    return {
        "config": config,
        "overall": overall,
        "top_shifted_tokens": [[tok.convert_ids_to_tokens(int(t)), n]
                               for t, n in shifted_tokens.most_common(top_tokens)],
        "documents": documents,
    }


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="domsum token-shift", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", required=True, help="lm-eval --log_samples JSONL of the adapted run")
    p.add_argument("--mode", choices=("model", "prompt"), default="model")
    g = p.add_argument_group("model vs model")
    g.add_argument("--base", help="base model (hub id or path)")
    g.add_argument("--base-peft", help="PEFT adapter on the base model")
    g.add_argument("--base-tokenizer", help="tokenizer of the base model (default: its own)")
    g.add_argument("--adapted", help="adapted model (default: --base)")
    g.add_argument("--adapted-peft", help="PEFT adapter on the adapted model")
    g.add_argument("--adapted-tokenizer", help="tokenizer of the adapted model (default: its own)")
    g = p.add_argument_group("prompt vs prompt")
    g.add_argument("--model", help="the one model (hub id or path)")
    g.add_argument("--peft", help="PEFT adapter on it")
    g.add_argument("--base-samples", help="samples file of the base-prompt (zero-shot) run, matched by doc_id")
    g.add_argument("--rebuild-zero-shot", action="store_true",
                   help="base prompt = the samples' prompt without its demonstrations")
    g.add_argument("--turn-marker", default=DEFAULT_TURN_MARKER,
                   help=f"text that starts each turn (default: {DEFAULT_TURN_MARKER!r})")
    g = p.add_argument_group("data")
    g.add_argument("--summary", choices=SUMMARY_SOURCES, default="generated",
                   help="which summary to read: the generation (resps, default), after filters, or the reference")
    g.add_argument("--filter", help="use the sample lines of this filter (default: the first per doc_id)")
    g.add_argument("--limit", type=int, help="only the first N documents")
    g.add_argument("--vocabulary", "--vocab", dest="vocabulary",
                   help="domain vocabulary file (default: the task's, see --task)")
    g.add_argument("--task", help="task name for the vocabulary (default: from the samples file name)")
    g.add_argument("--vocab-dir", help="vocabulary root (default: $DOMSUM_VOCAB_DIR, ~/.cache/domsum/vocab)")
    g.add_argument("--no-vocab", action="store_true", help="skip the domain-vocabulary statistics")
    g = p.add_argument_group("run")
    g.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, or balanced (accelerate device_map)")
    g.add_argument("--max-length", type=int, help="context limit (default: the models' own)")
    g.add_argument("--add-bos-token", choices=("auto", "true", "false"), default="auto",
                   help="special tokens on the prompt (default: as lm-eval, the tokenizer's default)")
    g.add_argument("--trust-remote-code", action="store_true")
    g = p.add_argument_group("output")
    g.add_argument("--out", "--output", dest="out",
                   help="JSON file: config, overall, top shifted tokens, per-document rows")
    g.add_argument("--csv", help="CSV file of per-document rows (streamed)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar (stderr)")
    return p


def _vocabulary(args: argparse.Namespace, p: argparse.ArgumentParser) -> tuple[list[str] | None, str | None]:
    from custom_metrics.dvo import VocabularyError, load_vocabulary, vocabulary_path
    from lm_eval_tasks.catalog import UnknownTask
    from lm_eval_tasks.catalog import task_target
    from lm_eval_tasks.settings import resolve

    if args.no_vocab:
        return None, None
    try:
        if args.vocabulary:
            return load_vocabulary(args.vocabulary), args.vocabulary
        task = args.task or task_from_samples_name(args.samples)
        if not task:
            p.error("cannot tell the task from the samples file name: "
                    "pass --vocabulary FILE, --task NAME or --no-vocab")
        benchmark, subset = task_target(task)
        path = vocabulary_path(benchmark, subset, resolve({"vocab_dir": args.vocab_dir}, "vocab_dir"))
        return load_vocabulary(path), str(path)
    except (VocabularyError, UnknownTask) as exc:
        p.exit(2, f"error: {exc}\n")
    return None, None  # unreachable


def config_from_args(args: argparse.Namespace, p: argparse.ArgumentParser) -> ShiftConfig:
    if args.mode == "model":
        if args.model or args.peft:
            p.error("--model/--peft are for --mode prompt; use --base/--adapted here")
        if not args.base:
            p.error("--mode model needs --base (and --adapted and/or --adapted-peft)")
        base = ModelSpec(args.base, args.base_peft, args.base_tokenizer)
        adapted = ModelSpec(args.adapted or args.base, args.adapted_peft, args.adapted_tokenizer)
        if adapted == base:
            log.warning("base and adapted are the same model: every shift will be 0")
        if args.base_samples or args.rebuild_zero_shot:
            p.error("--base-samples/--rebuild-zero-shot belong to --mode prompt")
    else:
        if args.adapted or args.adapted_peft or args.base_peft:
            p.error("--mode prompt compares two prompts on one model: use --model (and --peft)")
        path = args.model or args.base
        if not path:
            p.error("--mode prompt needs --model")
        if bool(args.base_samples) == bool(args.rebuild_zero_shot):
            p.error("--mode prompt needs exactly one of --base-samples FILE and --rebuild-zero-shot")
        base = ModelSpec(path, args.peft, args.base_tokenizer)
        adapted = None
    if args.limit is not None and args.limit < 0:
        p.error("--limit must be >= 0")
    return ShiftConfig(
        samples=args.samples, mode=args.mode, base=base, adapted=adapted,
        base_samples=args.base_samples, rebuild_zero_shot=args.rebuild_zero_shot,
        turn_marker=args.turn_marker, summary=args.summary, filter=args.filter,
        limit=args.limit, dtype=args.dtype, device=args.device, max_length=args.max_length,
        add_bos={"auto": None, "true": True, "false": False}[args.add_bos_token],
        trust_remote_code=args.trust_remote_code,
    )


def _fmt(x: Any) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = _parser()
    args = p.parse_args(argv)
    cfg = config_from_args(args, p)
    vocabulary, vocab_source = _vocabulary(args, p)
    cfg.vocab = vocab_source
    try:
        result = compute_shift(cfg, vocabulary, args.csv, progress=False if args.no_progress else None)
    except ValueError as exc:  # SamplesError, TokenizerMismatchError, bad settings
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2, ensure_ascii=False, default=str)
    o = result["overall"]
    print(f"{result['config']['base_label']}  ->  {result['config']['adapted_label']}")
    print(f"{o['documents']} documents, {o['positions']} summary positions "
          f"({o['positions_vocab']} at domain words), {o['forward_passes']} forward passes, "
          f"{o['seconds']:.1f} s")
    print(f"{'':14}{'KL (nats)':>10}{'shift %':>10}{'marginal %':>12}{'unshifted %':>13}")
    for label, sfx in (("all", ""), ("domain words", "_vocab")):
        print(f"{label:14}{_fmt(o['kl' + sfx]):>10}{_fmt(o['shift_rate' + sfx]):>10}"
              f"{_fmt(o['marginal_rate' + sfx]):>12}{_fmt(o['unshifted_rate' + sfx]):>13}")
    if args.out:
        print(f"written: {args.out}" + (f", {args.csv}" if args.csv else ""))
    return 0

