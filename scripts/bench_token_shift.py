"""Benchmark: one teacher-forced pass per document vs one pass per summary prefix.

``domsum token-shift`` reads the next-token distributions at every summary position
from ONE forward pass per model over prompt + summary. The AdaptEval release runs the
model once per prefix (``prompt + summary[:i]``, last position only, no KV cache). Both
give the same distributions; this script times them on a 256-token summary after a
~512-token prompt, for a base and an adapted model (base vs a perturbed copy), on CPU,
and checks that the two methods agree (max |log p| difference and identical shift
statistics).

    python scripts/bench_token_shift.py [--summary-tokens 256] [--prompt-tokens 512]
        [--docs 2] [--n-layer 2] [--n-embd 64] [--model PATH]

Without ``--model`` a tiny GPT-2 (``lm_eval_tasks/tiny_models.py``) is built in a temporary
directory; ``--threads`` pins torch's intra-op threads (default 1, a per-core figure).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file from the checkout: the repository is importable
    sys.path.insert(0, str(ROOT))


def _ids(tok, n: int, rng: random.Random, words: list[str]) -> list[int]:
    """Exactly ``n`` token ids of word-salad text from ``words``."""
    ids: list[int] = []
    while len(ids) < n:
        text = " " + " ".join(rng.choice(words) for _ in range(64))
        ids += tok(text, add_special_tokens=False)["input_ids"]
    return ids[:n]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--summary-tokens", type=int, default=256)
    p.add_argument("--prompt-tokens", type=int, default=512)
    p.add_argument("--docs", type=int, default=2, help="documents timed (per method)")
    p.add_argument("--model", help="a local causal LM to use as the base (default: a tiny GPT-2)")
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from custom_metrics.analysis.token_shift import ALL_POSITIONS, position_shift, summarize_shift
    from lm_eval_tasks.tiny_models import BASE_TEXT, build_causal_lm
    from custom_metrics.analysis.shift_models import Runner

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="bench_shift_") as tmp:
        path = args.model or str(build_causal_lm(Path(tmp) / "tiny", n_layer=args.n_layer,
                                                 n_embd=args.n_embd))
        tok = AutoTokenizer.from_pretrained(path)
        base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        adapted = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        torch.manual_seed(args.seed)
        with torch.no_grad():
            for prm in adapted.parameters():
                prm.add_(torch.randn_like(prm) * 0.05)
        n_params = sum(x.numel() for x in base.parameters())
        runners = [Runner(base), Runner(adapted)]
        rng = random.Random(args.seed)
        words = BASE_TEXT.replace(".", "").replace(":", "").replace("?", "").replace(",", "").split()
        docs = [(_ids(tok, args.prompt_tokens, rng, words), _ids(tok, args.summary_tokens, rng, words))
                for _ in range(args.docs)]
        for r in runners:  # warm-up, untimed
            r.summary_logits(docs[0][0], docs[0][1][:8])
            r.forward_passes = 0

        t0 = time.perf_counter()
        fast = [[r.summary_logits(pr, su) for r in runners] for pr, su in docs]
        t_fast = time.perf_counter() - t0
        passes_fast = sum(r.forward_passes for r in runners)
        for r in runners:
            r.forward_passes = 0
        t0 = time.perf_counter()
        slow = [[r.per_prefix_logits(pr, su) for r in runners] for pr, su in docs]
        t_slow = time.perf_counter() - t0
        passes_slow = sum(r.forward_passes for r in runners)

        diff = 0.0
        same_stats = True
        for (fb, fa), (sb, sa) in zip(fast, slow):
            for f, s in ((fb, sb), (fa, sa)):
                diff = max(diff, (torch.log_softmax(f, -1) - torch.log_softmax(s, -1)).abs().max().item())
            a = summarize_shift(*position_shift(fb, fa)[:2])
            b = summarize_shift(*position_shift(sb, sa)[:2])
            shifted, marginal, kl = (f"{k}{ALL_POSITIONS}" for k in ("shifted", "marginal", "kl"))  # no vocabulary
            same_stats &= (a[shifted], a[marginal]) == (b[shifted], b[marginal]) and abs(a[kl] - b[kl]) < 1e-4

    n = len(docs)
    print(f"model: {'tiny GPT-2' if not args.model else args.model} ({n_params / 1e6:.2f} M parameters), "
          f"CPU, {args.threads} thread(s); {n} documents of {args.prompt_tokens} prompt + "
          f"{args.summary_tokens} summary tokens; base and adapted model")
    print(f"one pass per document : {passes_fast / n:6.0f} forward passes/doc, "
          f"{t_fast / n * 1000:9.1f} ms/doc")
    print(f"one pass per prefix   : {passes_slow / n:6.0f} forward passes/doc, "
          f"{t_slow / n * 1000:9.1f} ms/doc")
    speedup = t_slow / t_fast
    print(f"speed-up: {speedup:.0f}x less time, {passes_slow / passes_fast:.0f}x fewer passes; "
          f"max |log p| difference {diff:.2e}; same shift statistics: {same_stats}")
    ok = speedup >= 10 and same_stats
    print("target >= 10x:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
