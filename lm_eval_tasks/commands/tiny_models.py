"""Builders for the tiny, locally trained models of ``domsum demo`` and the offline tests.

Why: no test may reach the Hugging Face hub, yet the end-to-end tests must run the
real ``lm_eval`` CLI on real ``transformers`` models. We train a byte-level BPE
tokenizer on text we have (the fixtures plus a built-in paragraph) with the
``tokenizers`` library and attach a randomly initialised (seeded) GPT-2 or T5 of a
few layers. Everything is saved with ``save_pretrained`` so that
``--model_args pretrained=<dir>`` loads it exactly as a hub model would.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

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


def _corpus(extra_dirs: Iterable[Path]) -> list[str]:
    texts = [BASE_TEXT] * 4
    for d in extra_dirs:
        for f in sorted(Path(d).rglob("*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    rec = json.loads(line)
                    texts.extend(str(v) for v in rec.values() if isinstance(v, str))
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


def build_causal_lm(out_dir: Path, data_dirs: Iterable[Path] = (), seed: int = 0,
                    n_layer: int = 2, n_embd: int = 64, n_positions: int = 2048) -> Path:
    """Save a tiny GPT-2 with its own BPE tokenizer to ``out_dir``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    out_dir = Path(out_dir)
    tokenizer = train_tokenizer(_corpus(data_dirs))
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
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
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
