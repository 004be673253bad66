"""Who produced a run's summaries: the system (a model plus every setting that changes its
outputs), read from a results file, and the labels that tell systems apart.

Why a module of its own: a system's identity is the report's pairing rule (reports never
pool runs that differ in any setting), kept apart from loading runs (:mod:`.runs`).

A *system* is a model plus every setting that changes what a run's tables show; two
runs are the same system only when all of these agree (:func:`system_of`):

* the model: for an API run (``model_args`` with ``model=`` and no ``pretrained=``,
  as ``local-completions``, ``local-chat-completions`` and ``openai-*`` take it) the
  served model's name; otherwise ``pretrained`` plus ``gguf_file``, ``revision`` and,
  for a LoRA run, the adapter ``peft``;
* the prompt format lm-eval records at the top of a results file: the chat template
  (``chat_template`` / ``chat_template_sha``; an empty template is the provider's own)
  and the system instruction (``system_instruction_sha``). Not ``fewshot_as_multiturn``:
  every suite task, a user's own domain included, writes its demonstrations into the
  text of one user turn and hands the harness no few-shot example, so the flag (which
  lm-eval records as true under ``--apply_chat_template``) changes no prompt;
* ``max_length`` of ``model_args`` (the context the prompts are fitted to);
* generation settings: ``config.gen_kwargs`` (the CLI's, except greedy ``do_sample=false``
  / ``temperature=0``, the suite's default) and whatever of the task's
  ``generation_kwargs`` differs from its catalogue default (stop sequences excepted:
  they are the task's prompt format);
* the prompt settings the user set (:data:`PROMPT_SETTINGS`: document and
  demonstration budgets, prompt tokenizer, demonstration seed, prompt variant), from
  ``configs.<task>.metadata.settings_used`` or the task metadata, left out when they
  are the setting's default;
* for tasks scored by an LLM judge, the judge model and its prompt variant
  (:data:`JUDGE_SETTINGS`, the recorded ``*_used`` values first);
* a study's variant (:data:`VARIANT_SETTINGS`): a ``domsum change-amplitude`` run with
  one control flipped on every document is that variant, never the model's run of the
  benchmark (:func:`lm_eval_tasks.analysis.change_amplitude.flipped_control`);
* the name the user gave (``run_label`` metadata, or ``domsum report --label``): runs
  given different names are different systems (:attr:`System.name`).

Shots are not part of a system: a 0-shot and a 2-shot run of one system are that
system in two settings. A named system is labelled by its name; systems of one model
are labelled by what differs between them (``SmolLM2 (chat)`` beside ``SmolLM2``,
``SmolLM2 [max_doc_words=200]``). Which of several runs of one system on one task the
report uses is :mod:`.runs`' rule.

A LoRA run's or full fine-tune's fine-tuning task comes from the ``run_card.json`` that
``domsum finetune`` writes into its output (the adapter folder, or the model folder of
a full fine-tune), so the report can pair it with its base model (same settings) and
place it in a cross-domain matrix. A folder given as ``DIR=fine-tuned`` marks systems
without a run card as fine-tuned.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_tasks import catalog
from lm_eval_tasks.analysis.amplitude import FLIP_KEY
from lm_eval_tasks.analysis.change_amplitude import flipped_control

CARD_NAME = "run_card.json"

#: settings that change a task's prompt -> the benchmarks they apply to (None: every one)
PROMPT_SETTINGS: dict[str, tuple[str, ...] | None] = {
    "max_doc_words": None, "max_doc_tokens": None, "max_demo_words": None, "max_demo_tokens": None,
    "max_demo_summary_words": ("adapteval",), "prompt_tokenizer": None, "chars_per_token": None,
    "fewshot_seed": None, "prompt_variant": None, "adapteval_prompt_variant": ("adapteval",),
    "ccs_prompt_file": ("ccsbench",),
}
#: settings of the LLM judge, part of a system on the tasks a judge scores
JUDGE_SETTINGS = ("judge_model", "judge_prompt_variant", "fm_variant", "fm_weights")
#: settings that make a run a study's variant, not a run of the benchmark as published: the
#: report leaves such runs out of its tables (:mod:`.runs`)
VARIANT_SETTINGS = (FLIP_KEY,)
#: what the task metadata records as the value a run used, where it is not ``<key>_used``
USED_ALIASES = {"adapteval_prompt_variant": "prompt_variant_used"}
#: generation settings every suite task shares (greedy decoding): not shown as a difference
GREEDY = {"do_sample": "false", "temperature": "0"}
#: model_args keys that name the model (beside ``pretrained`` / ``model``)
MODEL_KEYS = ("gguf_file", "revision")

Identity = tuple  # (base, adapter, model extras, settings, name): see System.identity
Setup = tuple  # (base, adapter, model extras, settings): see System.setup


@dataclass(frozen=True)
class System:
    """The model that produced a run's summaries, with the settings that shaped them."""

    base: str
    adapter: str | None = None
    #: catalogue task the system was fine-tuned on (run card), if known
    trained_on: str | None = None
    #: fine-tuned without a known task (a folder labelled ``=fine-tuned``)
    marked_fine_tuned: bool = False
    label: str = ""
    #: the model a full fine-tune started from (its run card), to pair it with that model
    started_from: str | None = None
    #: further model_args that name the model (``gguf_file``, ``revision``): sorted (key, value)
    model_extras: tuple[tuple[str, str], ...] = ()
    #: every identity setting with a value: sorted (name, value); see the module docstring
    settings: tuple[tuple[str, str], ...] = ()
    #: how each setting reads in a label (the system instruction's text, not its hash)
    shown: tuple[tuple[str, str], ...] = field(default=(), compare=False, hash=False)
    #: the name the user gave the system ("" when none): its label, and part of its identity
    name: str = ""

    @property
    def model(self) -> tuple[str, str | None, tuple[tuple[str, str], ...]]:
        """The model alone: base, adapter and the model_args that name its files."""
        return (self.base, self.adapter, self.model_extras)

    @property
    def setup(self) -> Setup:
        """What made the outputs: the model and every identity setting (the name aside)."""
        return (self.base, self.adapter, self.model_extras, self.settings)

    @property
    def base_setup(self) -> Setup | None:
        """The setup this one was fine-tuned from, same settings (None: not fine-tuned);
        its base is the system of that setup whatever name it was given."""
        if self.adapter:
            return (self.base, None, self.model_extras, self.settings)
        if self.started_from:
            return (self.started_from, None, (), self.settings)
        return None

    @property
    def variant(self) -> str:
        """The study variant this system is (``"focus flipped"``), "" for a run of the benchmark."""
        return ", ".join(setting_text(k, v) for k, v in self.settings if k in VARIANT_SETTINGS)

    @property
    def fine_tuned(self) -> bool:
        return bool(self.adapter or self.trained_on or self.marked_fine_tuned)

    @property
    def identity(self) -> Identity:
        return (*self.setup, self.name)

    def describe(self) -> str:
        """Every identity setting, as a label would show it ("" when none is set)."""
        return ", ".join(setting_text(k, v) for k, v in self.shown_settings())

    def shown_settings(self) -> list[tuple[str, str]]:
        shown = dict(self.shown)
        return [(k, shown.get(k, v)) for k, v in self.settings]

def _kv(text: Any) -> dict[str, str]:
    """``key=value,key2=value2`` (the CLI's form) or a dict, as a dict of strings."""
    if not text:
        return {}
    if isinstance(text, dict):
        return {str(k): v if isinstance(v, str) else json.dumps(v) if isinstance(v, (list, dict)) else str(v)
                for k, v in text.items()}
    out = {}
    for part in str(text).split(","):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def model_args(config: dict) -> dict[str, str]:
    """``model_args`` of a results file's config as a dict (the CLI string or a dict)."""
    return _kv(config.get("model_args"))


def canonical(value: Any) -> str:
    """One spelling per value: ``0``, ``0.0`` and ``"0"`` alike, booleans lower case, lists as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True)
    text = str(value).strip()
    if text.lower() in ("true", "false"):
        return text.lower()
    try:
        num = float(text)
    except ValueError:
        return text
    if math.isfinite(num) and num == int(num) and "e" not in text.lower():
        return str(int(num))
    return repr(num)


def short_name(name: str) -> str:
    """A local path's last component; a hub id (``org/model``) as it is."""
    if not name:
        return "model"
    looks_local = name.startswith(("/", ".", "~")) or os.sep in name and Path(name).exists()
    return Path(name.rstrip("/")).name if looks_local else name


def read_card(folder: str | None) -> dict[str, Any] | None:
    if not folder:
        return None
    path = Path(folder).expanduser() / CARD_NAME
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def served_model(config: dict) -> str | None:
    """The served model's name of an API run (``model=`` without ``pretrained=``), else None."""
    margs = model_args(config)
    if "pretrained" in margs:
        return None
    return margs.get("model") or None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _setting_value(meta: Mapping[str, Any], key: str, used: bool) -> Any:
    """The value of setting ``key`` a task ran with: what ``settings_used`` resolved, the
    recorded ``*_used`` value (``used``), else the task metadata; None when unset or default."""
    from lm_eval_tasks import settings

    default = settings.SETTINGS[key].default if key in settings.SETTINGS else None
    resolved = (meta.get("settings_used") or {}).get(key)
    value: Any = None
    if isinstance(resolved, dict) and "value" in resolved:
        value = None if resolved.get("from") == "default" else resolved["value"]
    if value is None and used:
        value = meta.get(USED_ALIASES.get(key, f"{key}_used"))
    if value is None:
        value = meta.get(key)
    if value in (None, ""):
        return None
    if default is not None and canonical(value) == canonical(default):
        return None
    return value


def _uses_judge(spec: catalog.TaskSpec | None) -> bool:
    from custom_metrics import registry

    if spec is None:
        return False
    out = False
    for fam in spec.families:
        try:
            out = out or "judge" in registry.get(fam).needs
        except KeyError:
            continue
    return out


def generation_settings(config: dict, task_config: Mapping[str, Any],
                        spec: catalog.TaskSpec | None) -> dict[str, str]:
    """The generation settings of a run of one task that are not the suite's defaults.

    The CLI's ``gen_kwargs`` apply to every task of a run and are kept as given (greedy
    decoding and the task's own stop sequences excepted); of the task's
    ``generation_kwargs``, the keys the CLI did not set count where they differ from the
    catalogue (``max_gen_toks``) or from greedy decoding. Stop sequences are the task's
    prompt format, not a setting.
    """
    cli = {k: canonical(v) for k, v in _kv(config.get("gen_kwargs")).items()}
    task_kw = task_config.get("generation_kwargs") or {}
    defaults = dict(GREEDY)
    if spec is not None:
        defaults["max_gen_toks"] = canonical(spec.max_gen_toks)
    out = {}
    for k, v in cli.items():
        if k == "until" and spec is not None and v == canonical(list(spec.until)):
            continue
        if GREEDY.get(k) == v:
            continue
        out[k] = v
    if isinstance(task_kw, dict):
        for k, v in task_kw.items():
            if k in cli or k == "until":
                continue
            v = canonical(v)
            if defaults.get(k) != v:
                out[k] = v
    return out


def identity_settings(results: Mapping[str, Any], task: str | None = None,
                      spec: catalog.TaskSpec | None = None,
                      results_file: Path | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(identity setting -> value, identity setting -> how a label shows it) of one task of
    a results file (read from ``results_file``, where known); settings with no value
    (unset, default) are left out."""
    config = results.get("config") or {}
    margs = model_args(config)
    task_config = ((results.get("configs") or {}).get(task) or {}) if task else {}
    meta = task_config.get("metadata") or {}
    values: dict[str, str] = {}
    shown: dict[str, str] = {}
    template = results.get("chat_template")
    sha = results.get("chat_template_sha") or (_sha(template) if template else None)
    chat = template is not None or bool(sha)
    if chat:  # "": applied by an API provider, whose template is unknown
        values["chat_template"] = sha or "provider"
    instruction = results.get("system_instruction")
    isha = results.get("system_instruction_sha") or (_sha(instruction) if instruction else None)
    if isha:
        values["system_instruction"] = isha
        if instruction:
            text = " ".join(str(instruction).split())
            shown["system_instruction"] = json.dumps(text if len(text) <= 24 else text[:23] + "…",
                                                     ensure_ascii=False)
    if margs.get("max_length"):
        values["max_length"] = canonical(margs["max_length"])
    for k, v in generation_settings(config, task_config, spec).items():
        values[f"gen_kwargs.{k}"] = v
    benchmark = spec.benchmark if spec else None
    for key, where in PROMPT_SETTINGS.items():
        if where is not None and benchmark not in where:
            continue
        value = _setting_value(meta, key, used=key in USED_ALIASES)
        if value is not None:
            values[key] = canonical(value)
    if _uses_judge(spec):
        for key in JUDGE_SETTINGS:
            value = _setting_value(meta, key, used=True)
            if value is not None:
                values[key] = canonical(value)
    flipped = flipped_control(meta, results_file)
    if flipped:
        values[FLIP_KEY] = flipped
    for key in ("prompt_tokenizer", "ccs_prompt_file"):
        if key in values:
            shown[key] = short_name(values[key])
    return values, shown


def system_of(config: dict, marked_fine_tuned: bool = False, results: Mapping[str, Any] | None = None,
              task: str | None = None, results_file: Path | None = None, name: str | None = None) -> System:
    """The :class:`System` of a results file's ``config`` (label filled in later); with the
    whole results file (``results``, read from ``results_file``) and a ``task``, the
    identity settings of that task. ``name``: the user's name for the run (``domsum report
    --label``), else the ``run_label`` the task's metadata recorded."""
    results = results if results is not None else {"config": config}
    margs = model_args(config)
    spec = None
    if task:
        try:
            spec = catalog.lookup(task)
        except catalog.UnknownTask:
            spec = None
    values, shown = identity_settings(results, task, spec, results_file)
    settings = tuple(sorted(values.items(), key=lambda kv: _order(kv[0])))
    shown_t = tuple(sorted(shown.items()))
    name = name or run_label(results, task)
    served = served_model(config)
    if served:
        return System(base=served, marked_fine_tuned=marked_fine_tuned, settings=settings, shown=shown_t,
                      name=name)
    base = margs.get("pretrained") or str(results.get("model_name") or config.get("model") or "model")
    adapter = margs.get("peft") or None
    extras = tuple(sorted((k, margs[k]) for k in MODEL_KEYS if margs.get(k) and not
                          (k == "revision" and margs[k] == "main")))
    card = read_card(adapter) or read_card(base)
    trained_on = str(card["task"]) if card and card.get("task") else None
    if card and not adapter:  # a full fine-tune: the card names the model it started from
        base_of = ((card.get("base_model") or {}).get("name_or_path")
                   or (card.get("hyperparameters") or {}).get("base"))
        if base_of:
            return System(base=base, trained_on=trained_on, marked_fine_tuned=True,
                          label=f"{short_name(str(base_of))} → {short_name(base)}",
                          started_from=str(base_of), model_extras=extras, settings=settings, shown=shown_t,
                          name=name)
    return System(base=base, adapter=adapter, trained_on=trained_on, marked_fine_tuned=marked_fine_tuned,
                  model_extras=extras, settings=settings, shown=shown_t, name=name)


def run_label(results: Mapping[str, Any], task: str | None) -> str:
    """The ``run_label`` a task of a results file recorded (its ``--metadata``), "" when none."""
    meta = (((results.get("configs") or {}).get(task) or {}).get("metadata") or {}) if task else {}
    value = meta.get("run_label")
    return " ".join(str(value).split()) if value not in (None, "") else ""


_ORDER = ["chat_template", "system_instruction", "max_length"]


def _order(name: str) -> tuple[int, str]:
    return (_ORDER.index(name) if name in _ORDER else len(_ORDER), name)


def setting_text(name: str, value: str) -> str:
    """How one identity setting reads in a label or description."""
    if name == "chat_template":
        return "chat" if value == "provider" else f"chat template {value[:7]}"
    if name == "system_instruction":
        return f"system instruction {value if value.startswith(chr(34)) else value[:7]}"
    if name == FLIP_KEY:
        return f"{value} flipped (change amplitude)"
    return f"{name.removeprefix('gen_kwargs.')}={value}"


def _model_label(system: System, depth: int) -> str:
    def tail(path: str) -> str:
        parts = Path(path.rstrip("/")).parts
        return "/".join(parts[-depth:]) if short_name(path) != path else path

    text = tail(system.base)
    extras = dict(system.model_extras)
    if extras.get("gguf_file"):
        text += f"/{Path(extras['gguf_file']).name}"
    if extras.get("revision"):
        text += f"@{extras['revision']}"
    if system.adapter:
        text += f" + {tail(system.adapter)}"
    return text


def _suffix(system: System, names: Sequence[str], chat_values: set[str]) -> str:
    """The label suffix naming ``system``'s values of the settings ``names`` (those that
    differ between the systems of one model): ``(chat)`` first, then ``[k=v, ...]``."""
    shown = dict(system.shown_settings())
    parts, chat = [], ""
    for name in names:
        if name not in shown:
            continue
        if name == "chat_template":
            value = shown[name]
            chat = " (chat)" if len(chat_values) <= 1 else f" (chat {value[:7] if value != 'provider' else 'provider'})"
        else:
            parts.append(setting_text(name, shown[name]))
    return chat + (f" [{', '.join(parts)}]" if parts else "")


def label_systems(systems: Iterable[System]) -> dict[Identity, str]:
    """Readable, distinct labels: the name the user gave, else the model's last path
    components (more of them where two models collide); then, where systems under one
    label differ in settings, what differs."""
    systems = list({s.identity: s for s in systems}.values())
    models = list({s.model: s for s in systems if not s.name}.values())
    model_labels: dict[Any, str] = {}
    for depth in range(1, 8):
        model_labels = {s.model: s.label or _model_label(s, depth) for s in models}
        if len(set(model_labels.values())) == len(model_labels):
            break
    model_labels = {k: v.lstrip("_") or "model" for k, v in model_labels.items()}
    by_label: dict[str, list[System]] = {}
    for s in systems:
        by_label.setdefault(s.name or model_labels[s.model], []).append(s)
    labels: dict[Identity, str] = {}
    for label, group in by_label.items():
        names = sorted({k for s in group for k, _ in s.settings}, key=_order)
        differing = [n for n in names if len({dict(s.settings).get(n) for s in group}) > 1]
        chats = {dict(s.settings)["chat_template"] for s in group if "chat_template" in dict(s.settings)}
        for s in group:
            labels[s.identity] = label + _suffix(s, differing, chats)
    seen: dict[str, int] = {}
    for v in labels.values():
        seen[v] = seen.get(v, 0) + 1
    for k, v in list(labels.items()):  # values that read alike (two paths ending alike): tell apart
        if seen[v] > 1:
            labels[k] = f"{v} #{_sha(repr(k))[:6]}"
    return labels


def same_model_notes(systems: Sequence[System], labels: Mapping[Identity, str]) -> list[str]:
    """One note per model evaluated under more than one set of settings or names."""
    by_model: dict[Any, dict[Identity, System]] = {}
    for s in systems:
        by_model.setdefault(s.model, {})[s.identity] = s
    notes = []
    for group in by_model.values():
        if len(group) < 2:
            continue
        names = sorted({k for s in group.values() for k, _ in s.settings}, key=_order)
        differing = [n.removeprefix("gen_kwargs.") for n in names
                     if len({dict(s.settings).get(n) for s in group.values()}) > 1]
        if len({s.name for s in group.values()}) > 1:
            differing.append("run_label")
        notes.append(f"{', '.join(sorted(labels[i] for i in group))}: one model run with different "
                     f"settings ({', '.join(differing)}); reported as separate systems, never pooled (the "
                     "significance table compares them pair by pair on the documents both logged)")
    return notes


__all__ = ["CARD_NAME", "GREEDY", "JUDGE_SETTINGS", "MODEL_KEYS", "PROMPT_SETTINGS", "USED_ALIASES",
           "VARIANT_SETTINGS", "Identity", "Setup", "System", "canonical", "generation_settings",
           "identity_settings", "label_systems", "model_args", "read_card", "run_label", "same_model_notes",
           "served_model", "setting_text", "short_name", "system_of"]
