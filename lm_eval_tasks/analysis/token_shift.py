"""The token-shift runner: token distribution shift (KL, shift rate) between two settings.

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

Per document and overall (formulas: :mod:`custom_metrics.analysis.token_shift`), over the
tokens that begin a domain-vocabulary word (AdaptEval Section 4's "tokens in the vocabulary
domain"): ``kl`` = mean KL(base || adapted), nats per position; ``shift_rate`` = % whose
adapted top-1 is not in the base top-3; ``marginal_rate`` (in it, not its top-1);
``unshifted_rate``; the same over every selected position as ``*_all_positions`` (the only
ones with ``--no-vocab``). Overall = mean over documents; ``pooled`` = over positions.
``units`` states each unit; ``published_comparison`` what Table 4 leaves unstated;
``published`` Table 4's values of the run's AdaptEval domain beside the run's, cited and
checked against the paper's protocol (:mod:`lm_eval_tasks.analysis.shift_report`).

The paper's protocol (settings, ``--positions``/``--samples``/``--seed`` or
metadata > environment > default): ``token_shift_samples`` documents (default 10, the
paper's Table 4 "calculated over 10 samples"; 0 = all) drawn with ``sample_seed`` from
the first ``--limit`` ones, in file order, and the overall numbers are the mean over
them; ``token_shift_positions`` = ``paper`` (default: every summary position) or
``release`` (the release's nouns, adjectives and verbs). The result's ``config``
records both, the drawn ``doc_ids`` and the exact ``window`` (tokens) prompt + summary
were fitted into, with where it came from.

    domsum token-shift --samples out/.../samples_adapteval_pubmed_<date>.jsonl \\
        --base meta-llama/Llama-2-7b-hf --adapted-peft out/lora_pubmed \\
        --dtype bfloat16 --out shift.json --csv shift.csv
    domsum token-shift --mode prompt --model meta-llama/Llama-2-7b-chat-hf \\
        --samples samples_adapteval_pubmed_2shot_<date>.jsonl --rebuild-zero-shot

Why in the suite's library (``domsum token-shift`` parses flags and calls
:func:`compute_shift`): it reads lm-eval samples files and the task catalogue; the
model side is :mod:`custom_metrics.analysis.shift_models`, the formulas
:mod:`custom_metrics.analysis.token_shift`.

The domain vocabulary (:func:`task_vocabulary`): ``--vocabulary FILE``, else the task's (``--task`` or the task name in
the samples file name, looked up in the task catalogue for its benchmark and subset)
under ``--vocab-dir`` / ``$DOMSUM_VOCAB_DIR`` / ``~/.cache/domsum/vocab`` (built by
``domsum build-vocab``); ``--no-vocab`` skips
the vocabulary statistics. Models with different tokenizers cannot be compared
position by position: that is an error.
"""

from __future__ import annotations

import csv
import json
import logging
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from custom_metrics.cells import csv_cell
from custom_metrics.errors import SuiteError
from custom_metrics.analysis.shift_models import (
    ModelSpec,
    Runner,
    TokenizerMismatchError,
    align_vocab,
    check_same_tokenizer,
    encode_prompt,
    encode_summary,
    fit_length,
    fitting_window,
    load_model,
    load_tokenizer,
    resolve_dtype,
)
from custom_metrics.analysis.token_shift import (
    ALL_POSITIONS,
    SHIFTED,
    STAT_KEYS,
    TABLE4_UNITS,
    aggregate_shift,
    domain_word_mask,
    position_shift,
    release_pos_mask,
    summarize_shift,
    units,
)
from lm_eval_tasks.analysis.shift_report import decoding_of, format_summary, published_beside
from lm_eval_tasks.data.loader import json_lines, seeded_sample
from lm_eval_tasks.results import first_text, task_from_samples_name
from lm_eval_tasks.settings import resolve

DEFAULT_TURN_MARKER = "Proceed to summarize the following text."
SUMMARY_SOURCES = ("generated", "filtered", "reference")
CSV_COLUMNS = (
    "doc_id", "prompt_tokens_base", "prompt_tokens_adapted", "summary_tokens", "truncated",
    "positions_dropped", *(f"{k}{sfx}" for sfx in ("", ALL_POSITIONS) for k in ("positions", *STAT_KEYS)),
)
__all__ = ["CSV_COLUMNS", "DEFAULT_TURN_MARKER", "SUMMARY_SOURCES", "FlagError", "ModelSpec", "SamplesError",
           "ShiftConfig", "config_from_flags", "flag_vocabulary", "run_shift", "TokenizerMismatchError",
           "compute_shift", "format_summary", "index_prompts", "iter_samples", "sample_prompt", "sample_summary",
           "task_vocabulary", "write_result", "zero_shot_from_last_turn"]


class SamplesError(SuiteError, ValueError):
    """A samples file that is not what lm-eval's ``--log_samples`` writes."""


class FlagError(SuiteError, ValueError):
    """Flags that do not describe one comparison; ``domsum token-shift`` shows it as a usage error."""


# --------------------------------------------------------------------------- samples


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
        return first_text(first["arg_0"])
    if isinstance(args, list) and args and isinstance(args[0], list) and args[0]:
        return first_text(args[0][0])
    raise SamplesError(f"{where}: no prompt (field 'arguments' missing or malformed)")


def sample_summary(sample: dict, source: str = "generated", where: str = "sample") -> str:
    """The summary to read: ``generated`` (``resps``: the raw generation),
    ``filtered`` (``filtered_resps``: after the task's filters) or ``reference``
    (``doc["summary"]``, else ``target``)."""
    if source == "generated":
        if "resps" not in sample:
            raise SamplesError(f"{where}: no 'resps' field")
        return first_text(sample["resps"])
    if source == "filtered":
        if "filtered_resps" not in sample:
            raise SamplesError(f"{where}: no 'filtered_resps' field")
        return first_text(sample["filtered_resps"])
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


def zero_shot_from_last_turn(prompt: str, marker: str = DEFAULT_TURN_MARKER) -> str:
    """Drop the demonstrations of a few-shot prompt: the text before the first
    ``marker`` (instruction, chat header) + the text from the last ``marker`` on
    (the query turn and anything after it, e.g. the assistant header)."""
    first = prompt.find(marker)
    if first < 0:
        raise SamplesError(f"turn marker {marker!r} not in the prompt; set --turn-marker")
    last = prompt.rfind(marker)
    return prompt[:first] + prompt[last:]


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
    #: settings ``token_shift_positions``, ``token_shift_samples``, ``sample_seed`` (None: resolved)
    positions: str | None = None
    sample_count: int | None = None
    seed: int | None = None
    #: the task of the samples (None: the one the samples file name names)
    task: str | None = None


def config_from_flags(f: dict[str, Any]) -> ShiftConfig:
    """The comparison that ``domsum token-shift``'s flags (``f``: their parsed values by
    destination) describe; :class:`FlagError` says which flags do not fit together."""
    if f["mode"] == "model":
        if f["model"] or f["peft"]:
            raise FlagError("--model/--peft are for --mode prompt; use --base/--adapted here")
        if not f["base"]:
            raise FlagError("--mode model needs --base (and --adapted and/or --adapted-peft)")
        base = ModelSpec(f["base"], f["base_peft"], f["base_tokenizer"])
        adapted = ModelSpec(f["adapted"] or f["base"], f["adapted_peft"], f["adapted_tokenizer"])
        if adapted == base:
            logging.getLogger("token_shift").warning("base and adapted are the same model: every shift will be 0")
        if f["base_samples"] or f["rebuild_zero_shot"]:
            raise FlagError("--base-samples/--rebuild-zero-shot belong to --mode prompt")
    else:
        if f["adapted"] or f["adapted_peft"] or f["base_peft"]:
            raise FlagError("--mode prompt compares two prompts on one model: use --model (and --peft)")
        path = f["model"] or f["base"]
        if not path:
            raise FlagError("--mode prompt needs --model")
        if bool(f["base_samples"]) == bool(f["rebuild_zero_shot"]):
            raise FlagError("--mode prompt needs exactly one of --base-samples FILE and --rebuild-zero-shot")
        base = ModelSpec(path, f["peft"], f["base_tokenizer"])
        adapted = None
    if f["limit"] is not None and f["limit"] < 0:
        raise FlagError("--limit must be >= 0")
    return ShiftConfig(
        samples=f["samples"], mode=f["mode"], base=base, adapted=adapted, base_samples=f["base_samples"],
        rebuild_zero_shot=f["rebuild_zero_shot"], turn_marker=f["turn_marker"], summary=f["summary"],
        filter=f["filter"], limit=f["limit"], dtype=f["dtype"], device=f["device"], max_length=f["max_length"],
        add_bos={"auto": None, "true": True, "false": False}[f["add_bos_token"]],
        trust_remote_code=f["trust_remote_code"], positions=f.get("positions"), sample_count=f.get("sample_count"),
        seed=f.get("seed"), task=f.get("task"))


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
    max_len, window_from = fitting_window(cfg.max_length, [(base_spec.label(), base_run),
                                                           (adapted_spec.label(), adapted_run)])
    n_tokens = len(tok)
    positions = str(resolve({"token_shift_positions": cfg.positions}, "token_shift_positions")).lower()
    n_samples = resolve({"token_shift_samples": cfg.sample_count}, "token_shift_samples")
    seed = resolve({"sample_seed": cfg.seed}, "sample_seed")

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
        samples = list(iter_samples(cfg.samples, cfg.filter))[:cfg.limit]
        available = len(samples)
        samples = seeded_sample(samples, n_samples or None, seed)
        for where, sample in track(samples, "token shift", total=len(samples), enabled=progress):
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
            s_ids, offsets = encode_summary(tok, summary, need_offsets=vocab is not None or positions == "release")
            if tok_adapted is not tok:
                if (encode_prompt(tok_adapted, adapted_prompt, cfg.add_bos) != p_adapted
                        or encode_summary(tok_adapted, summary, False)[0] != s_ids):
                    raise TokenizerMismatchError(f"{where}: the two tokenizers encode this document differently")
            p_base, s_fit, cut_b = fit_length(p_base, s_ids, max_len)
            p_adapted, _, cut_a = fit_length(p_adapted, s_ids, max_len)
            offsets = offsets[: len(s_fit)] if offsets is not None else None
            selected, dropped = release_pos_mask(summary, offsets) if positions == "release" else (None, 0)
            if s_fit:
                lb = base_run.summary_logits(p_base, s_fit)
                la = adapted_run.summary_logits(p_adapted, s_fit)
                lb, la = align_vocab(lb, la, n_tokens)
                kl, cat, top1 = position_shift(lb, la)
                counted = cat == SHIFTED
                if selected is not None:
                    counted &= torch.tensor(selected, dtype=torch.bool, device=cat.device)
                shifted_tokens.update(top1[counted].tolist())
            else:
                kl, cat = [], []
            mask = (domain_word_mask(summary, offsets, vocab) if vocab is not None and offsets is not None
                    else None)
            row = {"doc_id": sample["doc_id"], "prompt_tokens_base": len(p_base),
                   "prompt_tokens_adapted": len(p_adapted), "summary_tokens": len(s_fit),
                   "truncated": max(cut_a, cut_b), "positions_dropped": dropped}
            row.update(summarize_shift(kl, cat, mask, selected))
            documents.append(row)
            if writer:
                writer.writerow({k: csv_cell(v) for k, v in row.items()})
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
                   "window": max_len, "window_from": window_from, "positions": positions,
                   "sample_count": n_samples, "seed": seed, "documents_available": available,
                   "doc_ids": [d["doc_id"] for d in documents],
                   "vocabulary_size": len(vocab) if vocab else None,
                   "base_label": base_spec.label() + (" [zero-shot prompt]" if cfg.mode == "prompt" else ""),
                   "adapted_label": adapted_spec.label() + (" [samples prompt]" if cfg.mode == "prompt" else "")})
    result = {"config": config, "units": units(positions), "published_comparison": TABLE4_UNITS, "overall": overall,
              "top_shifted_tokens": [[tok.convert_ids_to_tokens(int(t)), n]
                                     for t, n in shifted_tokens.most_common(top_tokens)], "documents": documents}
    task = cfg.task or task_from_samples_name(cfg.samples)  # AdaptEval Table 4 beside it: shift_report
    return result | {"published": published_beside(result, task, decoding_of(samples[0][1] if samples else {}))}


# --------------------------------------------------------------------------- vocabulary and output


def task_vocabulary(samples: str, task: str | None, vocab_dir: str | None) -> tuple[list[str], str] | None:
    """The domain vocabulary of ``task`` (else the task named in the samples file name) and
    its file, under the resolved ``vocab_dir`` setting (metadata > ``$DOMSUM_VOCAB_DIR`` >
    default); None when no task can be told. Raises
    :class:`custom_metrics.families.dvo.VocabularyError` or :class:`lm_eval_tasks.catalog.UnknownTask`."""
    from custom_metrics.families.dvo import VocabularyNotFoundError, build_command, load_vocabulary
    from lm_eval_tasks.catalog import lookup
    from lm_eval_tasks.data.user_files import domain_vocabulary_path

    task = task or task_from_samples_name(samples)
    if not task:
        return None
    spec = lookup(task)
    root = resolve({"vocab_dir": vocab_dir}, "vocab_dir")
    path = domain_vocabulary_path(spec.benchmark, spec.subset, root)  # a user domain's: keyed by its train file
    if not path.is_file():  # the library's message names lm_eval's --metadata, which this command lacks
        raise VocabularyNotFoundError(
            f"no domain vocabulary for {spec.benchmark}/{spec.subset}: expected {path}. Build it with "
            f"`{build_command(spec.benchmark, spec.subset, root)}`, or pass --vocab-dir DIR (a folder holding "
            f"{spec.benchmark}/{spec.subset}.tsv), --vocabulary FILE, or --no-vocab to skip the vocabulary statistics.")
    return load_vocabulary(path), str(path)


def flag_vocabulary(samples: str, vocabulary: str | None, task: str | None, vocab_dir: str | None,
                    no_vocab: bool = False) -> tuple[list[str] | None, str | None]:
    """The vocabulary (and its file) the flags name: none with ``no_vocab``, else
    ``vocabulary``, else :func:`task_vocabulary`; :class:`FlagError` when no task can be told."""
    from custom_metrics.families.dvo import load_vocabulary

    if no_vocab:
        return None, None
    if vocabulary:
        return load_vocabulary(vocabulary), vocabulary
    found = task_vocabulary(samples, task, vocab_dir)
    if found is None:
        raise FlagError("cannot tell the task from the samples file name: "
                        "pass --vocabulary FILE, --task NAME or --no-vocab")
    return found


def run_shift(cfg: ShiftConfig, vocabulary: Sequence[str] | None, csv_path: str | None = None,
              out: str | None = None, progress: bool | None = None) -> str:
    """:func:`compute_shift`, its JSON written to ``out``, and the console text to print."""
    result = compute_shift(cfg, vocabulary, csv_path, progress=progress)
    if out:
        write_result(result, out)
    written = f"\nwritten: {out}" + (f", {csv_path}" if csv_path else "") if out else ""
    return format_summary(result) + written


def write_result(result: dict[str, Any], path: str | Path) -> None:
    """The whole result (config, units, overall, top shifted tokens, per-document rows) as JSON,
    through the suite's one writer (whole or not at all)."""
    from lm_eval_tasks.outputs import write_atomically

    write_atomically(Path(path), json.dumps(result, indent=2, ensure_ascii=False, default=str))
