"""A data-parallel CPU backend for lm-eval, and a one-rank runner (``python -m helpers.dp_lm``).

Why: lm-eval's HF backend shards documents only across GPUs (``accelerate launch``), so
the suite's data-parallel path cannot run on a CPU machine through it. ``DataParallelEchoLM``
does what that backend does for the evaluator under ``world_size > 1`` -- ``rank`` and
``world_size`` from the process group, ``all_gather`` of a tensor, ``gather_object`` to
rank 0, ``barrier`` -- backed by ``torch.distributed`` with the gloo backend, and answers
``generate_until`` with a deterministic function of the prompt, so a two-rank run and a
one-rank run of the same tasks are comparable document by document.

Run one rank (the test starts two, with ``MASTER_ADDR``/``MASTER_PORT``/``RANK``/
``WORLD_SIZE``/``LOCAL_RANK`` in the environment, or one with ``WORLD_SIZE=1``)::

    python -m helpers.dp_lm --out DIR --tasks a,b --metadata '{...}' --model-args '{...}'

Rank 0 writes ``DIR/results.json`` (lm-eval's results, samples included); every rank
writes ``DIR/rank<r>.json``: what its backend was asked to generate (task, doc_id) and
the rank/world size it reported. :func:`run_ranks` starts ``world`` such processes, as
``accelerate launch`` would, and waits for them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import lm_eval.models  # noqa: F401  (the built-in backends first: a registry holding only this one
# would otherwise answer `--model hf` with "no model for this name" in the same process)
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

MODEL_NAME = "domsum-dp-echo"

#: every backend built in this process (the runner reads what its backend was asked)
BUILT: list["DataParallelEchoLM"] = []


def _dist():
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


@register_model(MODEL_NAME)
class DataParallelEchoLM(LM):
    """Deterministic ``generate_until`` sharded like lm-eval's HF backend under ``accelerate``.

    ``generate_until`` picks a window of the prompt's words chosen by a hash of the prompt
    (so ROUGE and BERTScore are neither 0 nor 1), returns ``""`` for a prompt holding
    ``blank_if`` (an empty generation, counted by the suite), honours the request's stop
    sequences and cuts the text at ``max_gen_toks`` tokens of ``tokenizer`` as a real
    backend would. ``tokenizer`` and ``max_length`` let the suite measure prompts from
    the backend (``meter_from_backend``) exactly as with ``HFLM``.
    """

    def __init__(self, tokenizer: str | None = None, max_length: int = 2048, blank_if: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__()
        import torch

        dist = _dist()
        self._rank = dist.get_rank() if dist else 0
        self._world_size = dist.get_world_size() if dist else 1
        self._device = torch.device("cpu")
        self._max_length = int(max_length)
        self.blank_if = blank_if or None
        self.tokenizer = None
        if tokenizer:
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer))
        #: (task_name, doc_id) of every request this rank generated for, padding included
        self.asked: list[tuple[str, int]] = []
        BUILT.append(self)

    # ---------------------------------------------------------------- what the suite measures

    @property
    def max_length(self) -> int:
        return self._max_length

    def tok_encode(self, text: str) -> list[int]:
        assert self.tokenizer is not None
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    # ---------------------------------------------------------------- the distributed primitives

    def all_gather(self, tensor):
        """Like ``accelerator.gather``: every rank's tensor, concatenated (a 0-d one becomes 1-d)."""
        dist = _dist()
        if self.world_size <= 1 or dist is None:
            return tensor
        import torch

        t = tensor.reshape(1) if tensor.dim() == 0 else tensor
        parts = [torch.zeros_like(t) for _ in range(self.world_size)]
        dist.all_gather(parts, t.contiguous())
        return torch.cat(parts, dim=0)

    def gather_object(self, obj, dst: int = 0):
        """Like ``HFLM.gather_object``: the list of every rank's object on ``dst``, None elsewhere."""
        dist = _dist()
        if self.world_size <= 1 or dist is None:
            return [obj]
        result = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj, object_gather_list=result, dst=dst)
        return result

    def barrier(self) -> None:
        dist = _dist()
        if self.world_size > 1 and dist is not None:
            dist.barrier()

    # ---------------------------------------------------------------- requests

    def _generate(self, context: str, gen_kwargs: dict) -> str:
        if self.blank_if and self.blank_if in context:
            return ""
        words = context.split()
        digest = int(hashlib.sha256(context.encode("utf-8")).hexdigest(), 16)
        length = 6 + digest % 30
        start = (digest >> 16) % max(1, len(words) - length)
        text = " " + " ".join(words[start:start + length])
        until = gen_kwargs.get("until") or []
        for stop in [until] if isinstance(until, str) else until:
            if stop and stop in text:
                text = text[: text.index(stop)]
        limit = gen_kwargs.get("max_gen_toks")
        if limit and self.tokenizer is not None:
            enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            if len(enc["input_ids"]) > int(limit):
                text = text[: enc["offset_mapping"][int(limit) - 1][1]]
        return text

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        out = []
        for req in requests:
            context, gen_kwargs = req.args
            self.asked.append((req.task_name, int(req.doc_id)))
            out.append(self._generate(context, dict(gen_kwargs or {})))
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("generation-only test backend")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("generation-only test backend")


def _run(args: argparse.Namespace) -> None:
    import lm_eval
    from lm_eval.tasks import TaskManager
    from lm_eval.utils import handle_non_serializable

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        import torch.distributed as dist

        # the environment gives MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE; a dead peer ends the
        # run in two minutes instead of hanging the test
        dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=120))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        # by its registered name, as `lm_eval --model domsum-dp-echo` would build it
        # the task metadata as lm-eval's CLI makes it (model_args | --metadata), the index
        # limited to the suite as `domsum run` limits it
        model_args, metadata = json.loads(args.model_args), json.loads(args.metadata)
        manager = TaskManager(include_path=args.include_path, include_defaults=False,
                              metadata=model_args | metadata)
        res = lm_eval.simple_evaluate(
            model=MODEL_NAME, model_args=model_args, tasks=args.tasks.split(","), log_samples=True,
            task_manager=manager, metadata=metadata, gen_kwargs=args.gen_kwargs or None)
        assert len(BUILT) == 1, f"{len(BUILT)} backends built"
        lm = BUILT[0]
        (out / f"rank{lm.rank}.json").write_text(json.dumps(
            {"rank": lm.rank, "world_size": lm.world_size, "asked": lm.asked}))
        if lm.rank == 0:
            assert res is not None, "rank 0 got no results"
            (out / "results.json").write_text(json.dumps(res, default=handle_non_serializable))
        else:
            assert res is None, f"rank {lm.rank} got results"
    finally:
        if world > 1:
            import torch.distributed as dist

            dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(out: Path, world: int, tasks: tuple[str, ...], metadata: Mapping[str, Any],
              model_args: Mapping[str, Any], env: Mapping[str, str], gen_kwargs: str = "",
              timeout: float = 240) -> dict:
    """Run ``world`` ranks of this module to the end, with the environment ``accelerate launch``
    sets; any rank failing stops the others and raises with every rank's log tail.

    ``env``: the subprocess environment (the test session's, offline); ``PYTHONPATH`` gets
    the repository and ``tests/``, and one thread a process (two ranks share two cores, and
    every run encodes with the same thread count, the same float reductions, as the run it
    is compared with). Returns rank 0's results and every rank's ``rank<r>.json``.
    """
    root = Path(__file__).resolve().parents[2]
    out.mkdir(parents=True)
    port = _free_port()
    procs, logs = [], [out.parent / f"{out.name}.rank{r}.log" for r in range(world)]
    for rank in range(world):
        rank_env = {**env, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests"), env.get("PYTHONPATH", "")]),
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                    "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world),
                    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "DOMSUM_PROGRESS": "0"}
        cmd = [sys.executable, "-m", "helpers.dp_lm", "--out", str(out), "--tasks", ",".join(tasks),
               "--include-path", str(root / "lm_eval_tasks"), "--metadata", json.dumps(dict(metadata)),
               "--model-args", json.dumps(dict(model_args)), "--gen-kwargs", gen_kwargs]
        with open(logs[rank], "w") as log:  # the child keeps its own handle
            procs.append(subprocess.Popen(cmd, cwd=root, env=rank_env, stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    try:
        while any(p.poll() is None for p in procs):
            if any(p.returncode not in (None, 0) for p in procs) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    codes = [p.returncode for p in procs]
    if any(codes):
        tails = "\n".join(f"--- rank {r} (exit {c}):\n{logs[r].read_text()[-4000:]}" for r, c in enumerate(codes))
        raise AssertionError(f"{world}-rank run failed or timed out after {timeout} s:\n{tails}")
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
    return {"results": json.loads((out / "results.json").read_text()), "ranks": ranks}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--include-path", required=True)
    ap.add_argument("--metadata", default="{}")
    ap.add_argument("--model-args", default="{}")
    ap.add_argument("--gen-kwargs", default="")
    _run(ap.parse_args(argv))


if __name__ == "__main__":
    main()
