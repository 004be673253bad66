"""Scorer and prompt settings: task metadata first, then the environment.

Why: the harness hands ``--metadata`` to the task config, not to metric functions,
so the task object resolves every override once and the metrics receive plain values.
"""

from __future__ import annotations

import os
from typing import Any

# metadata key -> environment variable
ENV_FALLBACKS = {
    "data_dir": "DOMSUM_DATA_DIR",
    "bertscore_model": "DOMSUM_BERTSCORE_MODEL",
    "bertscore_layers": "DOMSUM_BERTSCORE_LAYERS",
    "bertscore_batch_size": "DOMSUM_BERTSCORE_BATCH_SIZE",
    "judge_model": "DOMSUM_JUDGE_MODEL",
    "judge_base_url": "OPENAI_BASE_URL",
    "vocab_dir": "DOMSUM_VOCAB_DIR",
    "prompt_tokenizer": "DOMSUM_PROMPT_TOKENIZER",
    "ccs_prompt_file": "DOMSUM_CCS_PROMPT_FILE",
}


def setting(metadata: dict | None, key: str, default: Any = None) -> Any:
    """``metadata[key]`` if set, else the key's environment variable, else default."""
    if metadata and metadata.get(key) not in (None, ""):
        return metadata[key]
    env = ENV_FALLBACKS.get(key)
    if env and os.environ.get(env, "") != "":
        return os.environ[env]
    return default


def int_setting(metadata: dict | None, key: str, default: int | None = None) -> int | None:
    """Integer setting; a non-integer value is a clear error."""
    value = setting(metadata, key, default)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"setting {key!r} must be an integer, got {value!r}") from None
