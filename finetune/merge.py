"""Merge a LoRA adapter into its base model and save a plain model directory.

Why: a merged model loads without ``peft=`` (e.g. in vLLM, or as
``--model_args pretrained=MERGED,backend=seq2seq``), at the cost of a full copy of
the weights::

    python -m finetune.merge --adapter out/samsum-lora [--base BASE] [--output DIR]

``--base`` defaults to the base recorded in the adapter's config; ``--output`` to
``ADAPTER/merged``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def merge_adapter(adapter: str | Path, output: str | Path | None = None, base: str | None = None) -> Path:
    from peft import PeftModel
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    adapter = Path(adapter)
    cfg_file = adapter / "adapter_config.json"
    if not cfg_file.is_file():
        raise SystemExit(f"finetune.merge: {adapter} has no adapter_config.json (not a LoRA output)")
    acfg = json.loads(cfg_file.read_text())
    if acfg.get("peft_type") != "LORA":  # a prefix is key/value positions, not a weight update to fold in
        raise SystemExit(f"finetune.merge: {adapter} holds a {acfg.get('peft_type')} adapter; only LoRA adapters "
                         f"merge into the base")
    base = base or acfg["base_model_name_or_path"]
    output = Path(output) if output else adapter / "merged"
    config = AutoConfig.from_pretrained(base)
    cls = AutoModelForSeq2SeqLM if getattr(config, "is_encoder_decoder", False) else AutoModelForCausalLM
    model = PeftModel.from_pretrained(cls.from_pretrained(base), str(adapter))
    merged = model.merge_and_unload()
    merged.save_pretrained(str(output))
    AutoTokenizer.from_pretrained(base).save_pretrained(str(output))
    return output


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m finetune.merge", description=__doc__.split("\n\n")[0])
    p.add_argument("--adapter", required=True, help="a LoRA output directory of python -m finetune")
    p.add_argument("--base", help="base model (default: the one recorded in the adapter)")
    p.add_argument("--output", help="where to save the merged model (default: ADAPTER/merged)")
    a = p.parse_args(argv)
    print(merge_adapter(a.adapter, a.output, a.base))


if __name__ == "__main__":
    main()
