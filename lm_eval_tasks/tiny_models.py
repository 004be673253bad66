"""Builders for the tiny, locally trained models of ``domsum demo`` and the offline tests.

Why: no test may reach the Hugging Face hub, yet the end-to-end tests must run the
real ``lm_eval`` CLI on real ``transformers`` models. We train a byte-level BPE
tokenizer on text we have (the sample mirror plus a built-in paragraph) with the
``tokenizers`` library and attach a randomly initialised (seeded) GPT-2 or T5 of a
few layers. Everything is saved with ``save_pretrained`` so that
``--model_args pretrained=<dir>`` loads it exactly as a hub model would.

The tests want the random model (fast to build; their assertions do not depend on
what it writes). ``domsum demo`` trains its GPT-2 for a few seconds
(``train_pairs``/``train_steps``): a random model's greedy continuation is one token
repeated (``::::``), whose ROUGE against any reference is 0.

Why here, in the installed package and not in ``tests/helpers``: ``domsum demo`` builds
its model from an installed wheel, where neither the tests nor the scripts exist; the
tests and ``scripts/bench_*.py`` import the same builders, so that what they time and
test is what the demo runs. It reads no suite fact (only JSON-lines files and
``tokenizers``/``transformers``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

#: written beside a trained model's weights: what the training did (steps, losses, seconds)
TRAINING_LOG = "tiny_training.json"

BASE_TEXT = (
    "The committee reviewed the report and summarized its findings for the public. "
    "Researchers measured the effect of the treatment on patients in a small trial. "
    "Today I learned that a short summary helps readers decide what to read next. "
    "Anna: are you coming tonight? Tom: yes, I will bring the cake. "
    "Step one: gather the tools. Step two: clean the surface before you paint it. "
)

SPECIALS = ["<|endoftext|>", "<pad>", "<unk>"]

# A minimal chat template so ``--apply_chat_template`` runs are testable offline.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


#: record fields left out of a tiny tokenizer's corpus: CCSBench's full texts repeat their
#: introduction and conclusion at length and would outweigh every other text of the mirror
CORPUS_SKIPPED = ("full_text",)


def _corpus(extra_dirs: Iterable[Path]) -> list[str]:
    texts = [BASE_TEXT] * 4
    for d in extra_dirs:
        for f in sorted(Path(d).rglob("*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    texts.extend(str(v) for k, v in rec.items() if isinstance(v, str) and k not in CORPUS_SKIPPED)
    return texts


def train_tokenizer(texts: list[str], vocab_size: int = 800):
    """A byte-level BPE tokenizer wrapped as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def train_on_pairs(model, tokenizer, pairs: Sequence[tuple[str, str]], steps: int, seed: int = 0,
                   max_len: int = 128, batch_size: int = 8, lr: float = 3e-3) -> list[float]:
    """Train a causal LM on (prompt, target) pairs; return the loss of every step.

    The loss is on the target (and the end-of-text token after it) only, so the model
    learns to answer a prompt and then stop, not to write prompts. Each example keeps its
    last ``max_len`` tokens: the end of the prompt (``SUMMARY:``) and the target, which
    is what generation continues from. One torch thread: on two shared cores the tiny
    matrix products run several times faster than with two, and the result does not
    depend on the machine's core count. Batches are drawn with a seeded generator.
    """
    import torch

    eos = tokenizer.eos_token_id
    examples = []
    for prompt, target in pairs:
        head = tokenizer(prompt)["input_ids"]
        tail = tokenizer(" " + target.strip())["input_ids"] + [eos]
        ids, labels = (head + tail)[-max_len:], ([-100] * len(head) + tail)[-max_len:]
        examples.append((ids, labels))
    if not examples or steps <= 0:
        return []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        model.train()
        losses = []
        for _ in range(steps):
            picked = [examples[i] for i in torch.randint(len(examples), (batch_size,), generator=gen).tolist()]
            width = max(len(ids) for ids, _ in picked)
            input_ids = torch.full((len(picked), width), tokenizer.pad_token_id)
            labels = torch.full((len(picked), width), -100)
            mask = torch.zeros((len(picked), width), dtype=torch.long)
            for row, (ids, lab) in enumerate(picked):
                input_ids[row, :len(ids)] = torch.tensor(ids)
                labels[row, :len(lab)] = torch.tensor(lab)
                mask[row, :len(ids)] = 1
            logits = model(input_ids=input_ids, attention_mask=mask).logits
            # next-token loss written out: the model's own (labels=...) warns about its config
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                                                     ignore_index=-100)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        model.eval()
        return losses
    finally:
        torch.set_num_threads(threads)


def build_causal_lm(out_dir: Path, data_dirs: Iterable[Path] = (), seed: int = 0,
                    n_layer: int = 2, n_embd: int = 64, n_positions: int = 2048, vocab_size: int = 800,
                    train_pairs: Sequence[tuple[str, str]] = (), train_steps: int = 0) -> Path:
    """Save a tiny GPT-2 with its own BPE tokenizer to ``out_dir``.

    The tokenizer learns from the ``*.jsonl`` texts under ``data_dirs`` and the
    ``train_pairs``. Random weights unless ``train_steps`` > 0: then the model is
    trained on ``train_pairs`` ((prompt, target) texts, :func:`train_on_pairs`) and
    :data:`TRAINING_LOG` records the steps, first and last loss and seconds taken.
    """
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    out_dir = Path(out_dir)
    texts = _corpus(data_dirs) + [f"{prompt} {target}" for prompt, target in train_pairs]
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    log = None
    if train_steps > 0:
        start = time.perf_counter()
        losses = train_on_pairs(model, tokenizer, train_pairs, train_steps, seed=seed)
        log = {"steps": len(losses), "examples": len(train_pairs), "seed": seed,
               "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "seconds": round(time.perf_counter() - start, 2)}
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    if log is not None:
        (out_dir / TRAINING_LOG).write_text(json.dumps(log, indent=2) + "\n", encoding="utf-8")
    return out_dir


def build_seq2seq_lm(out_dir: Path, data_dirs: Iterable[Path] = (), seed: int = 0,
                     d_model: int = 64, num_layers: int = 2) -> Path:
    """Save a tiny T5 encoder-decoder with its own BPE tokenizer to ``out_dir``."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    out_dir = Path(out_dir)
    tokenizer = train_tokenizer(_corpus(data_dirs))
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=d_model,
        d_kv=32,
        d_ff=128,
        num_layers=num_layers,
        num_decoder_layers=num_layers,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    model = T5ForConditionalGeneration(config)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
