"""What makes two runs one system: the identity rules on hand-made records."""

from __future__ import annotations


from lm_eval_tasks import catalog
from lm_eval_tasks.report.systems import System, label_systems, system_of
from helpers.report_identity import TASK_0


def _system(task: str = TASK_0, config: dict | None = None, meta: dict | None = None,
            gen: dict | None = None, **top) -> System:
    config = {"model": "hf", "model_args": "pretrained=org/m", **(config or {})}
    task_cfg = {"metadata": meta or {}}
    if gen is not None:
        task_cfg["generation_kwargs"] = gen
    results = {"config": config, "configs": {task: task_cfg}, **top}
    return system_of(config, results=results, task=task)


def test_identity_rules():
    spec = catalog.lookup(TASK_0)
    plain = _system()
    assert plain.settings == () and plain.base == "org/m"
    # generation: greedy decoding and the catalogue's max_gen_toks are no setting; CLI overrides are
    defaults = {"until": list(spec.until), "max_gen_toks": spec.max_gen_toks, "do_sample": False, "temperature": 0.0}
    assert _system(gen=defaults).identity == plain.identity
    assert _system(config={"gen_kwargs": "do_sample=false,temperature=0"}, gen=defaults).identity == plain.identity
    assert dict(_system(config={"gen_kwargs": {"max_gen_toks": 64}}, gen={**defaults, "max_gen_toks": 64})
                .settings) == {"gen_kwargs.max_gen_toks": "64"}
    assert dict(_system(config={"gen_kwargs": "max_gen_toks=64"}).settings) == {"gen_kwargs.max_gen_toks": "64"}
    assert dict(_system(gen={**defaults, "temperature": 0.7, "do_sample": True}).settings) == {
        "gen_kwargs.do_sample": "true", "gen_kwargs.temperature": "0.7"}
    # prompt settings: set ones count, defaults do not; settings_used (resolved) before metadata
    assert dict(_system(meta={"max_doc_words": 200}).settings) == {"max_doc_words": "200"}
    assert _system(meta={"fewshot_seed": 1234}).identity == plain.identity
    assert dict(_system(meta={"settings_used": {"max_doc_tokens": {"value": 300, "from": "environment"}}})
                .settings) == {"max_doc_tokens": "300"}
    assert _system(meta={"settings_used": {"max_doc_tokens": {"value": None, "from": "default"}}}).settings == ()
    assert dict(_system(config={"model_args": "pretrained=org/m,max_length=2048"}).settings) == {"max_length": "2048"}
    # a judge counts on the tasks it scores only
    judged = "adapteval_pubmed_judged"
    assert _system(meta={"judge_model": "gpt-a"}).settings == ()
    assert dict(_system(judged, meta={"judge_model": "gpt-a"}).settings) == {"judge_model": "gpt-a"}
    assert dict(_system(judged, meta={"judge_model_used": "gpt-b", "judge_model": "gpt-a"}).settings) == {
        "judge_model": "gpt-b"}
    assert dict(_system("adapteval_pubmed", meta={"prompt_variant_used": "release"}).settings) == {
        "adapteval_prompt_variant": "release"}
    assert _system("adapteval_pubmed", meta={"prompt_variant_used": "paper"}).settings == ()
    # chat template, system instruction, fewshot_as_multiturn (with a chat template only)
    chat = _system(chat_template="{{ x }}", chat_template_sha="abc1234def", fewshot_as_multiturn=True)
    assert dict(chat.settings) == {"chat_template": "abc1234def", "fewshot_as_multiturn": "true"}
    assert _system(chat_template=None, fewshot_as_multiturn=False).identity == plain.identity
    assert dict(_system(chat_template="").settings) == {"chat_template": "provider"}
    told = _system(system_instruction="Summarize briefly.", system_instruction_sha="f00d")
    assert dict(told.settings) == {"system_instruction": "f00d"}
    # the model: gguf_file and revision name files; an adapter pairs with its base on the same settings
    gguf = _system(config={"model_args": "pretrained=org/m-GGUF,gguf_file=m-q8_0.gguf"})
    lora = _system(config={"model_args": "pretrained=org/m,peft=/ckpt/lora"}, meta={"max_doc_words": 200})
    assert lora.base_identity == _system(meta={"max_doc_words": 200}).identity != plain.identity
    # labels: the model's name, then what differs between the systems of one model
    chat2 = _system(chat_template="{{ y }}", chat_template_sha="9999999fff", fewshot_as_multiturn=True)
    budget = _system(meta={"max_doc_words": 200})
    labels = label_systems([plain, chat, budget, gguf, told])
    assert [labels[s.identity] for s in (plain, chat, budget, gguf, told)] == [
        "org/m", "org/m (chat)", "org/m [max_doc_words=200]", "org/m-GGUF/m-q8_0.gguf",
        'org/m [system instruction "Summarize briefly."]']
    labels = label_systems([plain, chat, chat2])
    assert [labels[s.identity] for s in (plain, chat, chat2)] == ["org/m", "org/m (chat abc1234)",
                                                                  "org/m (chat 9999999)"]
    assert label_systems([chat])[chat.identity] == "org/m"  # one system of a model: its name alone
