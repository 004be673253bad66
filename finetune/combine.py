"""Combine trained LoRA adapters with fixed weights into one adapter (LoRAHub's composition).

Why: CCSBench (Section 6, Table 4 row D1) composes per-attribute LoRA modules with
LoRAHub (Huang et al., 2024), "which assigns a fixed weight to each LoRA module". LoRAHub
composes N modules of equal rank as ``(w1 A1 + ... + wN AN)(w1 B1 + ... + wN BN)``: the
two low-rank factors are each a weighted sum, so the update has cross terms and is *not*
the weighted sum of the modules' updates. The result is one ordinary LoRA adapter,
loaded like any other::

    python -m finetune.combine --adapters out/len out/kw out/read out/focus \\
        --weights 0.25 0.25 0.25 0.25 --out out/lorahub
    lm_eval --model hf --model_args pretrained=BASE,peft=out/lorahub ...

Rules, in peft's notation (a module's update is ``s B A``, ``s`` = alpha / r), both through
peft's ``add_weighted_adapter``:

* ``lorahub`` (default): peft's ``linear`` combination given the squared weights. peft's
  ``linear`` forms ``A = sum(sign(w) sqrt(|w| s) A_i)`` and ``B = sum(sqrt(|w| s) B_i)``
  with the new adapter's scaling 1; given ``w_i**2`` that is ``sqrt(s) sum(w_i A_i)`` and
  ``sqrt(s) sum(w_i B_i)`` (negative weights flip both factors), so the update is ``s (sum w_i B_i)(sum w_i A_i)``, LoRAHub's
  rule, exactly when the modules share rank and alpha and the weights share a sign (peft
  puts the sign on one factor only). Anything else is refused in one line.
* ``cat``: peft's ``cat``: the modules stacked, rank = the sum of ranks, update
  ``sum(w_i s_i B_i A_i)``, the exact weighted sum of the updates; ranks and signs may differ.

The output folder holds the adapter and a run card naming the parts and weights.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from finetune.errors import ConfigError

RULES = ("lorahub", "cat")
SCHEMA = "domsum-finetune-combine-card/1"


def read_part(folder: str | Path) -> dict[str, Any]:
    """One part's ``adapter_config.json``, or a ConfigError saying why the folder is not a LoRA adapter."""
    path = Path(folder)
    cfg_file = path / "adapter_config.json"
    if not cfg_file.is_file():
        raise ConfigError(f"{path} is not an adapter folder (no adapter_config.json)")
    try:
        cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{cfg_file} is unreadable: {exc}") from None
    if not isinstance(cfg, dict) or cfg.get("peft_type") != "LORA":
        kind = cfg.get("peft_type") if isinstance(cfg, dict) else None
        raise ConfigError(f"{path} holds a {kind or 'non-peft'} adapter; only LoRA adapters combine")
    if not any((path / n).is_file() for n in ("adapter_model.safetensors", "adapter_model.bin")):
        raise ConfigError(f"{path} has no adapter weights (adapter_model.safetensors)")
    return cfg


def check_parts(adapters: list[str], weights: list[float], rule: str, base: str | None) -> tuple[list[dict], str]:
    """The parts' configs and the base model, or a ConfigError for parts that cannot combine."""
    from finetune.card import model_identity

    if rule not in RULES:
        raise ConfigError(f"unknown combination {rule!r}: choose one of {', '.join(RULES)}")
    if len(adapters) < 2:
        raise ConfigError(f"give at least two adapters to combine, got {len(adapters)}")
    if len(weights) != len(adapters):
        raise ConfigError(f"--weights gives {len(weights)} weight(s) for {len(adapters)} adapters")
    configs = [read_part(a) for a in adapters]
    bases = {model_identity(str(c.get("base_model_name_or_path") or "")) for c in configs}
    if len(bases) > 1:
        named = ", ".join(f"{a}: {c.get('base_model_name_or_path')}" for a, c in zip(adapters, configs))
        raise ConfigError(f"the adapters were trained on different base models ({named})")
    tasks = {c.get("task_type") for c in configs}
    if len(tasks) > 1:
        raise ConfigError(f"the adapters are of different task types ({', '.join(sorted(map(str, tasks)))})")
    if rule == "lorahub":
        shapes = {(c.get("r"), c.get("lora_alpha")) for c in configs}
        if len(shapes) > 1:
            named = ", ".join(f"{a}: r={c.get('r')} alpha={c.get('lora_alpha')}" for a, c in zip(adapters, configs))
            raise ConfigError(f"the lorahub combination needs equal ranks and alphas ({named}); "
                              f"use --combination cat for adapters of different ranks")
        if any(w > 0 for w in weights) and any(w < 0 for w in weights):
            raise ConfigError("the lorahub combination takes weights of one sign (peft's linear rule signs one "
                              "side only); use --combination cat for mixed signs")
    if any(c.get("rank_pattern") or c.get("alpha_pattern") for c in configs):
        raise ConfigError("adapters with per-module ranks or alphas (rank_pattern, alpha_pattern) are not combined")
    return configs, base or bases.pop()


def combine(adapters: list[str], weights: list[float], output: str | Path, rule: str = "lorahub",
            base: str | None = None, overwrite: bool = False, argv: list[str] | None = None) -> dict[str, Any]:
    """Write the combined adapter and its run card to ``output``; return the card."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    from finetune.card import CARD_NAME, eval_command, model_identity, now, versions, write_card

    from custom_metrics.outputs import check_folder, output_folder

    weights = [float(w) for w in weights]
    configs, base = check_parts(adapters, weights, rule, base)
    out = Path(output).resolve()
    check_folder(out, overwrite)          # before any model loads
    seq2seq = configs[0].get("task_type") == "SEQ_2_SEQ_LM"
    cls = AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM
    try:
        model = cls.from_pretrained(base)
    except Exception as exc:  # noqa: BLE001 - transformers raises many types for a bad path
        raise ConfigError(f"cannot load the base model {base!r}: {exc}") from None
    names = [f"part{i}" for i in range(len(adapters))]
    model = PeftModel.from_pretrained(model, str(adapters[0]), adapter_name=names[0])
    for name, folder in zip(names[1:], adapters[1:]):
        model.load_adapter(str(folder), adapter_name=name)
    peft_type = "linear" if rule == "lorahub" else "cat"
    given = [w * w for w in weights] if rule == "lorahub" else weights
    # "default": peft saves the adapter of that name at the folder's top, where peft= looks
    model.add_weighted_adapter(names, given, "default", combination_type=peft_type)
    model.set_adapter("default")  # the parts go; deleting the active one would warn that peft switched
    for name in names:
        model.delete_adapter(name)

    cards = [_part_card(a) for a in adapters]
    tasks = {c.get("task") for c in cards}
    task = tasks.pop() if len(tasks) == 1 else None
    kind = "seq2seq" if seq2seq else "causal"
    with output_folder(out, overwrite) as tmp:
        model.save_pretrained(str(tmp), selected_adapters=["default"])
        new_cfg = json.loads((tmp / "adapter_config.json").read_text(encoding="utf-8"))
        card = {
            "schema": SCHEMA,
            "created": now(),
            "command": list(argv) if argv is not None else None,
            "method": "lora_combination",
            "combination": rule,
            "peft_combination_type": peft_type,
            "peft_weights": given,
            "base_model": base,
            "parts": [{"adapter": str(Path(a).resolve()), "weight": w, "r": c.get("r"),
                       "lora_alpha": c.get("lora_alpha"), "target_modules": c.get("target_modules"),
                       "task": pc.get("task"), "run_card": pc.get("_path")}
                      for a, w, c, pc in zip(adapters, weights, configs, cards)],
            "output": {"dir": str(out), "format": "peft_adapter", "r": new_cfg.get("r"),
                       "lora_alpha": new_cfg.get("lora_alpha"),
                       "load_with": f"lm_eval --model hf --model_args pretrained={model_identity(base)},peft={out}"
                                    + (",backend=seq2seq" if seq2seq else "")},
            "versions": versions(),
        }
        if task:  # the parts' common task: the command that evaluates the combination on it
            meta = (cards[0].get("hyperparameters") or {}).get("metadata") or {}
            card["output"]["evaluate_with"] = eval_command(base, str(out), task, kind, "lora", meta)
        write_card(tmp / CARD_NAME, card)
    return card


def _part_card(adapter: str | Path) -> dict[str, Any]:
    """The part's run card (task, settings) when ``python -m finetune`` wrote one, else {}."""
    from finetune.card import CARD_NAME

    path = Path(adapter) / CARD_NAME
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {**card, "_path": str(path.resolve())} if isinstance(card, dict) else {}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m finetune.combine", description=__doc__.split("\n\n")[0])
    p.add_argument("--adapters", nargs="+", required=True, metavar="DIR",
                   help="LoRA adapter folders of the same base model (python -m finetune outputs)")
    p.add_argument("--weights", nargs="+", required=True, type=float, metavar="W", help="one weight per adapter")
    p.add_argument("--out", "--output", dest="output", required=True, help="folder of the combined adapter")
    p.add_argument("--combination", default="lorahub", choices=RULES,
                   help="lorahub (default): update s (sum w B)(sum w A), equal ranks and alphas, weights of one "
                        "sign; cat: update sum w s B A, any ranks")
    p.add_argument("--base", help="base model (default: the one recorded in the adapters)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier output in --out")
    return p


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import sys

    from custom_metrics.outputs import OutputError

    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    a = parser.parse_args(args)
    try:
        card = combine(a.adapters, a.weights, a.output, a.combination, a.base, a.overwrite,
                       argv=["python", "-m", "finetune.combine", *args])
    except (ConfigError, OutputError) as exc:
        parser.exit(2, f"finetune.combine: error: {exc}\n")
    print(f"finetune.combine: saved the combined LoRA adapter to {card['output']['dir']}")
    print(f"finetune.combine: evaluate it with: {card['output'].get('evaluate_with') or card['output']['load_with']}")
    return card


if __name__ == "__main__":
    main()
