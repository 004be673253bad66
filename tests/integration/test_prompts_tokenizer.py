"""DomainSum's token budget counted with the evaluated model's own tokenizer (the tiny GPT-2)."""


from lm_eval_tasks.benchmarks.prompting import truncate, truncate_tokens


def test_token_budget_uses_the_models_tokenizer(tiny_causal_lm):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_causal_lm)
    text = "The committee reviewed the report and summarized its findings for the public. " * 20
    cut = truncate_tokens(text, 25, str(tiny_causal_lm))
    assert len(tok(cut, add_special_tokens=False)["input_ids"]) <= 25
    assert text.startswith(cut) and len(cut) < len(text)
    assert truncate(text, max_words=3, max_tokens=25, tokenizer_name=str(tiny_causal_lm)) == cut
