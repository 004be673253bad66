"""The run card: one JSON file beside the trained weights that makes a result traceable.

``OUTPUT/run_card.json`` records the base model, task, preset, method, every resolved
hyper-parameter, the decisions taken at run time (precision, optimizer and
quantisation fallbacks, LoRA targets, the prefix length), the data (sizes, dropped / truncated counts,
SHA-256 of the exact training and validation texts), the seed, metrics (training loss
history, evaluation loss per epoch, throughput), the package versions and the
``lm_eval`` command that evaluates the output.

The card as it stands when training starts is also kept beside the checkpoints
(``OUTPUT/checkpoints/run_card.json``): ``--resume`` compares the settings that make
the model (:data:`MODEL_KEYS`) with it and refuses a mismatch before loading anything,
since a checkpoint of one base resumed on another either fails deep in transformers
or, for a base of the same shape, trains the wrong model without a word.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from custom_metrics import secrets
from finetune.config import PEFT_METHODS
from finetune.errors import ConfigError
from lm_eval_tasks import include_path

CARD_NAME = "run_card.json"
#: where the printed evaluation command writes its results, inside the training output
EVAL_DIR = "eval"
#: where the printed evaluation command of the base model writes its results (the baseline)
BASE_EVAL_DIR = "eval_base"
SCHEMA = "domsum-finetune-run-card/1"
#: the settings that make the trained model: a resumed run must keep every one
MODEL_KEYS = ("base", "method", "model_type", "task")
LORA_KEYS = ("lora_r", "lora_alpha", "lora_target_modules")
PREFIX_KEYS = ("num_virtual_tokens",)
#: method -> the settings that shape its trained weights (beyond :data:`MODEL_KEYS`)
METHOD_KEYS = {"lora": LORA_KEYS, "prefix": PREFIX_KEYS}
PACKAGES = ("torch", "transformers", "peft", "accelerate", "datasets", "tokenizers",
            "lm_eval", "bitsandbytes", "deepspeed", "domsum-eval")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    out["git_commit"] = git_commit()
    return out


def git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def eval_command(base: str, output: str, task: str, kind: str, method: str,
                 metadata: dict | None = None, baseline: bool = False) -> str:
    """The ``lm_eval`` command that evaluates this output on its task, ready to paste
    (``baseline``: the base model itself, the same way, into ``OUTPUT/eval_base``).

    It names the installed task folders by absolute path (``lm_eval_tasks.include_path()``,
    so it runs from any directory) and logs per-document samples to ``OUTPUT/eval``, the
    folder to give ``domsum report``.
    """
    base = model_identity(base)
    metadata = {k: (str(Path(v).resolve()) if k.endswith("_dir") and isinstance(v, str) and Path(v).exists()
                    else v) for k, v in (metadata or {}).items()}
    margs = (f"pretrained={base}" if baseline else f"pretrained={base},peft={output}" if method in PEFT_METHODS
             else f"pretrained={output}")
    if kind == "seq2seq":
        margs += ",backend=seq2seq"
    args = ["lm_eval", "--model", "hf", "--model_args", margs, "--include_path", task_folder(task),
            "--tasks", task, "--log_samples", "--output_path", str(Path(output) / (BASE_EVAL_DIR if baseline else EVAL_DIR))]
    if metadata:
        args += ["--metadata", json.dumps(metadata)]
    return secrets.mask(shlex.join(args))


def model_identity(base: str) -> str:
    """A base model as one string from any directory: a local folder's absolute path, else the hub id."""
    return str(Path(base).resolve()) if Path(base).exists() else base


def model_settings(hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """The settings of :data:`MODEL_KEYS` and of the run's method (:data:`METHOD_KEYS`), the base by identity."""
    keys = MODEL_KEYS + METHOD_KEYS.get(str(hyperparameters.get("method")), ())
    out = {k: hyperparameters.get(k) for k in keys}
    out["base"] = model_identity(str(out["base"] or ""))
    return out


def check_resume(cfg, checkpoint: Path, output: Path) -> None:
    """Refuse to resume ``checkpoint`` with model settings other than those it was trained
    with, in one line naming each recorded and given value.

    The record is the start card beside the checkpoints (or a finished run's card);
    a checkpoint from a version that kept none is resumed as before, said once.
    """
    for path in (checkpoint.parent / CARD_NAME, output / CARD_NAME):
        if path.is_file():
            break
    else:
        from finetune.model import notice

        notice(f"--resume: no run card beside {checkpoint}; its base model and settings cannot be checked")
        return
    try:
        recorded = model_settings(json.loads(path.read_text(encoding="utf-8"))["hyperparameters"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"--resume: the run card {path} is unreadable ({exc}); pass --overwrite to start "
                          f"over") from None
    given = model_settings(cfg.to_dict())
    differ = [f"{k} {recorded[k]!r} (given {given[k]!r})" for k in recorded if recorded[k] != given.get(k)]
    if differ:
        raise ConfigError(f"--resume: {checkpoint} was trained with " + ", ".join(differ)
                          + "; resume with the recorded values, or pass --overwrite to start over")


def task_folder(task: str) -> str:
    """The folder that holds ``task``: a user domain's own task folder, else the suite's."""
    from lm_eval_tasks import catalog

    source = catalog.lookup(task).source
    if source is not None and source.origin and source.origin.endswith(".yaml"):
        return str(Path(source.origin).resolve().parent)
    return include_path()


def loss_curves(log_history: list[dict]) -> dict[str, Any]:
    """Training loss history and evaluation loss per evaluation from the Trainer's log."""
    train = [{"step": e["step"], "epoch": e.get("epoch"), "loss": e["loss"]}
             for e in log_history if "loss" in e and "step" in e]
    evals = [{"step": e["step"], "epoch": e.get("epoch"), "eval_loss": e["eval_loss"]}
             for e in log_history if "eval_loss" in e]
    return {"train_loss_history": train, "eval_loss_history": evals}


def write_card(path: Path, card: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    card = secrets.mask_obj(json.loads(json.dumps(card, ensure_ascii=False, default=str)))
    tmp.write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_card(output: str | Path) -> dict[str, Any]:
    return json.loads((Path(output) / CARD_NAME).read_text(encoding="utf-8"))


def base_card(cfg, argv: list[str] | None = None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "created": now(),
        "command": list(argv if argv is not None else sys.argv),
        "task": cfg.task,
        "preset": cfg.preset,
        "method": cfg.method,
        "seed": cfg.seed,
        "hyperparameters": cfg.to_dict(),
        "versions": versions(),
    }
