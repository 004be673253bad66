"""A mistake at a command's door is one line naming what to change, said before any work:
no traceback, no message about a file the command made itself, no file the user did not
ask for."""

from __future__ import annotations

import pytest

from lm_eval_tasks.commands import change_amplitude


@pytest.mark.parametrize("n", ["0", "-3"])
def test_change_amplitude_refuses_fewer_than_one_row_at_parsing(tmp_path, capsys, n):
    out = tmp_path / "ca"
    with pytest.raises(SystemExit) as done:
        change_amplitude.main(["--model-args", "pretrained=no-such-model", "--n", n, "--out", str(out)])
    assert done.value.code == 2 and not out.exists()
    assert capsys.readouterr().err.splitlines() == [
        f"domsum change-amplitude: error: --n must be >= 1 (test rows sampled), got {n}"]


def test_report_names_a_results_file_cut_short_and_where_its_json_breaks(tmp_path, capsys):
    import json

    from lm_eval_tasks.commands import report

    whole = json.dumps({"results": {"domainsum_cnndm": {"rouge1,none": 0.25, "rouge1_stderr,none": 0.01}},
                        "config": {"model": "hf", "model_args": "pretrained=m"}})
    path = tmp_path / "runs" / "m" / "results_2025-01-02T10-20-30.123456.json"
    path.parent.mkdir(parents=True)
    cut = whole.index("0.25") + len("0.25")  # an interrupted write, after a number
    path.write_text(whole[:cut])
    assert report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"report: error: no suite task with results in {tmp_path / 'runs'} (give the folders lm_eval --output_path "
        f"wrote); {path}: not valid JSON at line 1, column {cut + 1} (character {cut} of {cut}): Expecting ',' "
        f"delimiter; the file ends before its JSON does (cut short?)"]
    assert not (tmp_path / "o").exists()


def test_a_json_error_inside_a_file_is_not_called_a_cut():
    import json

    from lm_eval_tasks.results import json_error

    text = '{"results": {"a": 1,, "b": 2}}\n'
    with pytest.raises(json.JSONDecodeError) as err:
        json.loads(text)
    assert json_error(err.value, text) == (f"not valid JSON at line 1, column 21 (character 20 of {len(text)}): "
                                           f"Expecting property name enclosed in double quotes")


def test_a_harness_tasks_hub_data_is_checked_before_the_model(tmp_path, monkeypatch):
    """A harness task's hub dataset: offline, looked up in the local cache; online, the hub
    probed (a closed port here); local files and packaged builders are not the hub's."""
    from lm_eval_tasks.preparation import check

    tasks = [("t1", {"dataset_path": "domsum-tests/no-such-dataset", "dataset_name": "cfg"}),
             ("t2", {"dataset_path": "domsum-tests/no-such-dataset", "dataset_name": "cfg"}),
             ("t3", {"dataset_path": "json", "dataset_kwargs": {"data_files": "x.jsonl"}}),
             ("t4", {"dataset_path": str(tmp_path)}), ("t5", {})]
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    said = check.harness_data_problem("grp", tasks)
    assert said.startswith("task 'grp' is a harness task, not the suite's; its data (domsum-tests/no-such-dataset "
                           "(cfg)) is not in the local Hugging Face cache and offline mode is on "
                           "(HF_DATASETS_OFFLINE=1): run it once where the hub is reachable, or leave it out of "
                           "--tasks ("), said
    assert "\n" not in said
    assert check.harness_data_problem("local", tasks[2:]) is None

    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    check._hub_probe.cache_clear()
    try:
        said = check.harness_data_problem("grp", tasks)
    finally:
        check._hub_probe.cache_clear()
    assert said.startswith("task 'grp' is a harness task, not the suite's; its data (domsum-tests/no-such-dataset "
                           "(cfg)) comes from the hub, which cannot be reached (127.0.0.1: "), said
    assert said.endswith("): with HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 it is read from the local Hugging Face "
                         "cache if it was downloaded before, or leave it out of --tasks")


def test_a_window_cut_after_the_word_budget_says_both_cuts():
    """A 50,000-word document: the word budget cuts it to 1,200 words in the prompt, then
    the window cuts more tokens; the run's line says both, with the record's numbers."""
    import json

    from lm_eval_tasks.benchmarks.domainsum import build as domainsum
    from lm_eval_tasks.benchmarks.budget import FitLog, fit_prompt, meter_from_metadata
    from lm_eval_tasks.benchmarks.prompting import truncate
    from lm_eval_tasks.harness_parts.fitting import budget_report, cut_warning

    long_doc = " ".join(f"w{i % 97}" for i in range(50_000))
    short_doc = "a short document about ports and ships"
    docs = {key: {"id": key, "document": text,
                  "prompt": domainsum.ZERO_SHOT.replace("{document}", truncate(text, max_words=1200))}
            for key, text in (("long", long_doc), ("short", short_doc))}
    meter = meter_from_metadata({"model": "served", "base_url": "http://127.0.0.1:1/v1", "max_length": 1024}, 256,
                                chars_per_token=3.0)
    fit = FitLog(meter)

    def render(prompt: str) -> str:  # what local-chat-completions sends
        return json.dumps([{"role": "user", "content": prompt}])

    for key, doc in docs.items():
        fit.per_doc[key] = fit_prompt("mine", render, doc["prompt"], doc["document"], meter)
    cut = fit.per_doc["long"].cut_tokens
    assert cut > 0 and fit.per_doc["short"].cut_tokens == 0
    record = budget_report(fit, "--model_args", None, docs)
    assert (record["cut_to_fit"], record["cut_by_word_budget"], record["word_budget_words_before_max"],
            record["word_budget_words_kept_max"]) == (1, 1, 50_000, 1200)
    assert cut_warning("mine", record) == (
        f"task mine: 1 of 2 prompt(s) exceeded the model's window (1024 tokens, 256 kept for the summary); their "
        f"documents were cut inside the prompt, by {cut} tokens at most, after the document budget (max_doc_words, "
        f"or max_doc_tokens) had cut 1 document(s) of the task to at most 1,200 words (the longest had 50,000)")
    del docs["long"], fit.per_doc["long"]
    assert cut_warning("mine", budget_report(fit, "--model_args", None, docs)) is None


def test_the_smollm2_script_answers_help_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """``--help`` is help, not a folder named ``--help`` receiving a converted model."""
    from helpers.scripts import SCRIPTS, load_script

    monkeypatch.chdir(tmp_path)
    script = load_script("smollm2_checkpoint")
    for flag in ("--help", "-h"):
        with pytest.raises(SystemExit) as done:
            script.main([flag])
        assert done.value.code == 0
        said = capsys.readouterr().out
        assert said.startswith("usage: python scripts/smollm2_checkpoint.py [-h] [root]") and "Prints the checkpoint" in said
    with pytest.raises(SystemExit) as done:
        script.main(["--root", "x"])
    assert done.value.code == 2 and "unrecognized arguments: --root" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [] and not (SCRIPTS.parent / "--help").exists()


def test_batch_size_advice_only_where_the_window_is_far_larger():
    from lm_eval_tasks.harness_parts.fitting import batch_size_advice

    assert batch_size_advice(131_072, 1_213) == (
        "--batch_size auto probes batches as long as the model's window (131072 tokens), while the longest prompt "
        "of this run's suite tasks plus max_gen_toks is 1213 tokens: pass max_length=1280 in --model_args to probe "
        "at that length (every prompt fits as it is; other tasks of the run are not measured), or a fixed "
        "--batch_size (docs/running.md#on-gpus)")
    assert "max_length=8192" in batch_size_advice(131_072, 8_192)
    assert batch_size_advice(8_192, 4_097) is None and batch_size_advice(8_192, 4_096) is not None
    assert batch_size_advice(8_192, 0) is None
    # a window already at the advised length (a small need rounded up to 256) is not told to shrink to itself
    assert batch_size_advice(256, 100) is None and batch_size_advice(512, 100) is not None


def test_change_amplitude_samples_the_papers_300_rows_by_default_and_says_what_that_costs(capsys):
    """CCSBench Section 5 draws 300 test rows per attribute; --help says so and what it costs."""
    with pytest.raises(SystemExit) as done:
        change_amplitude.main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "default 300, the paper's" in text and "300 x 5 = 1,500 generations" in text
    assert change_amplitude.PAPER_N == 300
