"""Bad inputs through the real commands: the harness, rescore, report and meta-eval in
subprocesses, and the stub judge server.

Each case feeds a command what users fed it (a misspelled or out-of-range setting, a key in
metadata or in a URL, an output that exists, Ctrl-C while judging) and checks the one-line
error, the exit status and that nothing secret or earlier is lost.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURE_DATA, ROOT, minilm_dir, run_lm_eval, sigint_default, subprocess_env
from helpers.judge_server import StubJudgeServer, Text, clear_judge_env

from custom_metrics import secrets
from custom_metrics.families import judge_metrics
from custom_metrics.judge import JudgeConfig, judge_scores
from helpers.bad_inputs import TASK, _mirror


KEY = "sk-test-SECRET-0123456789"


def meta(**extra) -> str:
    return json.dumps({"data_dir": str(FIXTURE_DATA), "bertscore_model": minilm_dir(), "bertscore_layers": 6,
                       **extra})


def domsum(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", *args], cwd=ROOT,
                          env=env or subprocess_env(), capture_output=True, text=True, timeout=600)


def harness(args: list[str], out: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return domsum("run", *args, "--output_path", str(out), env=env)


def one_error_line(proc: subprocess.CompletedProcess, marker: str = "error: ") -> str:
    """The command failed with no traceback; the last stderr line holding ``marker``."""
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if marker in line]
    assert lines, proc.stderr[-3000:]
    return lines[-1]


def test_a_misspelled_key_stops_the_harness_before_generation(tiny_causal_lm, tmp_path):
    proc = harness(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm},max_length=512",
                    "--tasks", TASK, "--limit", "1", "--metadata", meta(max_doc_word=20)], tmp_path)
    line = one_error_line(proc)
    assert "unknown setting 'max_doc_word'; did you mean 'max_doc_words'?" in line, line
    assert not list(tmp_path.rglob("results_*.json"))


def test_out_of_range_setting_stops_the_harness(tiny_causal_lm, tmp_path):
    proc = harness(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", TASK,
                    "--limit", "1", "--metadata", meta(max_doc_words=0)], tmp_path)
    assert "'max_doc_words' (metadata 'max_doc_words') must be >= 1, got 0" in one_error_line(proc)


def test_a_key_in_metadata_is_refused_and_never_printed(tiny_causal_lm, tmp_path):
    proc = harness(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", TASK,
                    "--limit", "1", "--metadata", meta(judge_api_key=KEY)], tmp_path)
    line = one_error_line(proc)
    assert "'judge_api_key' must not be given in metadata" in line and "DOMSUM_JUDGE_API_KEY" in line
    assert KEY not in proc.stdout + proc.stderr
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY in p.read_text(errors="replace")]
    ft = subprocess.run([sys.executable, "-m", "finetune", "--task", "domainsum_samsum", "--base",
                         str(tiny_causal_lm), "--method", "lora", "--preset", "domainsum", "--data-dir", str(FIXTURE_DATA),
                         "--metadata", json.dumps({"judge_api_key": KEY}), "--output", str(tmp_path / "ft")],
                        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert ft.returncode != 0 and "must not be given in metadata" in ft.stderr
    assert KEY not in ft.stdout + ft.stderr and not (tmp_path / "ft" / "run_card.json").exists()


def test_url_credentials_are_masked_everywhere(tmp_path, monkeypatch):
    assert secrets.mask(f"http://user:{KEY}@host/v1") == "http://user:***@host/v1"
    assert secrets.mask(f"http://host/v1?api_key={KEY}&x=1") == "http://host/v1?api_key=***&x=1"
    assert secrets.mask(json.dumps({"u": f"https://h/v1?token={KEY}"})) == '{"u": "https://h/v1?token=***"}'
    clear_judge_env(monkeypatch)
    with StubJudgeServer() as server:
        server.set_default(Text("4"))
        url = server.url.replace("http://", f"http://judge:{KEY}@")
        cfg = JudgeConfig(model="stub", base_url=url, api_key="local", cache=str(tmp_path / "c.sqlite"),
                          logprobs="off", n_samples=1)
        judge_scores([[{"role": "user", "content": "rate 1-5"}]], (1, 5), cfg)
        assert KEY not in json.dumps(cfg.describe())
    con = sqlite3.connect(str(tmp_path / "c.sqlite"))
    assert not [r for r in con.execute("SELECT endpoint, request, response FROM answers") if KEY in "".join(r)]
    with pytest.raises(Exception) as info:
        judge_metrics.check_endpoint(JudgeConfig(model="m", base_url=f"http://u:{KEY}@127.0.0.1:9/v1", cache=None))
    # the key left the URL for the Authorization header: the error names the bare endpoint
    assert KEY not in str(info.value) and "http://127.0.0.1:9/v1" in str(info.value)


def test_an_unusable_judge_cache_never_costs_the_scores(tmp_path, monkeypatch, caplog):
    clear_judge_env(monkeypatch)
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a database" * 100)
    folder = tmp_path / "a_folder.sqlite"
    folder.mkdir()
    with StubJudgeServer() as server:
        server.set_default(Text("4"))
        for cache in (corrupt, folder):
            cfg = JudgeConfig(model="stub", base_url=server.url, api_key="local", cache=str(cache),
                              logprobs="off", n_samples=1)
            res = judge_scores([[{"role": "user", "content": f"rate {cache.name}"}]], (1, 5), cfg)
            assert res.scores == [4.0]
            assert res.stats.cache_unusable.startswith(str(cache))
            assert "judged without a cache" in res.stats.summary_line()
    assert sum("cannot be used" in r.getMessage() for r in caplog.records) == 2
    assert corrupt.read_bytes().startswith(b"this is not a database")  # left as it was


def test_rescore_never_overwrites_and_outputs_never_collide(tmp_path):
    table = tmp_path / "preds.csv"
    with open(table, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "prediction", "reference"])
        w.writerows([["1", "the cat sat", "a cat sat"], ["2", "dogs bark", "the dog barks"]])
    args = ["rescore", str(table), "--task", TASK, "--metrics", "rouge", "--bootstrap", "0", "--no-progress",
            "--out", str(tmp_path / "out")]
    assert domsum(*args).returncode == 0
    scores = tmp_path / "out" / "preds.scores.jsonl"
    before = scores.read_text()
    again = domsum(*args)
    assert "already exists" in one_error_line(again) and "--overwrite" in one_error_line(again)
    assert scores.read_text() == before
    assert domsum(*args, "--overwrite").returncode == 0
    other = tmp_path / "elsewhere" / "preds.csv"
    other.parent.mkdir()
    other.write_text(table.read_text())
    clash = domsum("rescore", str(table), str(other), "--task", TASK, "--metrics", "rouge", "--no-progress",
                   "--out", str(tmp_path / "both"))
    assert "would both write" in one_error_line(clash)
    assert not (tmp_path / "both").exists() or not any((tmp_path / "both").iterdir())


def test_report_never_replaces_an_earlier_report(tmp_path, tiny_causal_lm):
    runs = tmp_path / "runs"
    run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", TASK, "--limit", "2",
                 "--log_samples", "--metadata", meta()], runs)
    out = tmp_path / "report"
    first = domsum("report", str(runs), "--out", str(out), "--no-progress", "--no-plots")
    assert first.returncode == 0, first.stderr[-2000:]
    html = (out / "report.html").read_text()
    again = domsum("report", str(runs), "--out", str(out), "--no-progress", "--no-plots")
    assert "--overwrite" in one_error_line(again) and (out / "report.html").read_text() == html
    assert domsum("report", str(runs), "--out", str(out), "--no-progress", "--no-plots",
                  "--overwrite").returncode == 0
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]  # nothing half-written left


def test_ctrl_c_during_judging_keeps_the_generations(tmp_path, tiny_causal_lm):
    """The generations are saved before judging starts; an interrupted judge costs none of
    them, and ``domsum rescore`` over the saved file finishes the judging."""
    import signal
    import time

    from helpers.judge_server import Stall

    task, gens = "ccsbench_focus", tmp_path / "generations"
    env = subprocess_env(OPENAI_API_KEY="local", OPENAI_BASE_URL="", DOMSUM_GENERATIONS_DIR=str(gens))
    with StubJudgeServer() as server:
        server.set_default(Stall(max_s=60))
        m = json.dumps({"data_dir": str(FIXTURE_DATA), "judge_model": "stub", "judge_base_url": server.url,
                        "judge_cache": str(tmp_path / "judge.sqlite")})
        proc = subprocess.Popen([sys.executable, "-m", "lm_eval_tasks.cli", "run", "--model", "hf", "--model_args",
                                 f"pretrained={tiny_causal_lm}", "--tasks", task, "--limit", "2", "--gen_kwargs",
                                 "max_gen_toks=8", "--metadata", m, "--output_path", str(tmp_path / "out")],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=sigint_default)
        deadline = time.monotonic() + 180
        while server.received == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # judging has started: the first judge request is in flight
        assert server.received > 0, proc.communicate(timeout=30)[1][-3000:]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and not list((tmp_path / "out").rglob("results_*.json"))
    [saved] = gens.glob(f"samples_{task}_*.jsonl")
    rows = [json.loads(line) for line in saved.read_text().splitlines()]
    assert [r["doc_id"] for r in rows] == [0, 1] and all(isinstance(r["filtered_resps"][0], str) for r in rows)
    assert str(saved) in err  # the log says where they are and how to finish
    assert "Traceback" not in err and "interrupted; the generations were saved before judging" in err
    with StubJudgeServer() as server:
        server.set_default(Text("empirical"))
        done = domsum("rescore", str(saved), "--metrics", "ccs_focus", "--judge-model", "stub", "--judge-base-url",
                      server.url, "--judge-cache", str(tmp_path / "judge.sqlite"), "--no-progress",
                      "--out", str(tmp_path / "rescored"), env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(next((tmp_path / "rescored").glob("*.summary.json")).read_text())
    assert summary["task"] == task and summary["n_samples"] == 2
    assert summary["metrics"]["focus_parse_failures"] == 0


def test_meta_eval_refuses_duplicate_pairs_and_non_numeric_human_scores(tmp_path):
    def table(rows: list[list]) -> Path:
        path = tmp_path / f"t{len(list(tmp_path.iterdir()))}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["doc_id", "system", "human", "rouge1"])
            w.writerows(rows)
        return path

    ok = [["d1", "A", 1, 0.1], ["d1", "B", 2, 0.3], ["d2", "A", 3, 0.2], ["d2", "B", 4, 0.5]]
    dup = table([*ok, ["d1", "A", 5, 0.9]])
    err = one_error_line(domsum("meta-eval", str(dup), "--out", str(tmp_path / "o1")))
    assert "document 'd1', system 'A' on rows 1, 5" in err and "more than once" in err
    bad = table([*ok[:3], ["d2", "B", "good", 0.5]])
    err = one_error_line(domsum("meta-eval", str(bad), "--out", str(tmp_path / "o2")))
    assert "row 4 ('good')" in err and "not numbers" in err
    assert domsum("meta-eval", str(table(ok)), "--out", str(tmp_path / "o3")).returncode == 0


def test_rescore_counts_empty_predictions_and_references_and_refuses_short_rows(tmp_path):
    short = tmp_path / "short.csv"
    short.write_text("id,prediction,reference\n1,the cat sat,a cat sat\n2,dogs bark\n")
    err = one_error_line(domsum("rescore", str(short), "--task", TASK, "--metrics", "rouge", "--no-progress"))
    assert "row 2 (line 3): 2 fields, the header has 3 (no 'reference')" in err
    empty = tmp_path / "empty.csv"
    empty.write_text("id,prediction,reference\n1,the cat sat,a cat sat\n2,,the ref\n3,a b,\n")
    assert domsum("rescore", str(empty), "--task", TASK, "--metrics", "rouge", "--bootstrap", "0",
                  "--no-progress").returncode == 0
    summary = json.loads((tmp_path / "empty.summary.json").read_text())
    assert summary["n_samples"] == 1 and summary["skipped_rows"]["count"] == 2
    assert [r["why"] for r in summary["skipped_rows"]["rows"]] == ["empty prediction", "empty reference"]


def test_rescore_reads_the_task_from_the_samples_not_the_file_name(tmp_path, tiny_causal_lm):
    run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", "domainsum_samsum",
                 "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=8", "--metadata", meta()],
                tmp_path / "run")
    [samples] = (tmp_path / "run").rglob("samples_domainsum_samsum_*.jsonl")
    renamed = tmp_path / samples.name.replace("domainsum_samsum", "adapteval_pubmed")
    renamed.write_text(samples.read_text())
    done = domsum("rescore", str(renamed), "--metrics", "rouge", "--bootstrap", "0", "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the file name says task adapteval_pubmed, its samples say domainsum_samsum" in done.stderr
    summary = json.loads(next(tmp_path.glob("*.summary.json")).read_text())
    assert summary["task"] == "domainsum_samsum"


@pytest.mark.parametrize("where", ["user-info", "query"])
def test_a_key_in_the_judge_url_reaches_no_file_and_no_stream(tmp_path, tiny_causal_lm, where):
    """A judged harness run whose judge URL carries a key: the results, the samples, the
    saved generations, the judge cache and both streams are grepped for it."""
    with StubJudgeServer() as server:
        server.set_default(Text("empirical"))
        base = server.url
        url = (base.replace("http://", f"http://judge:{KEY}@") if where == "user-info" else f"{base}?api_key={KEY}")
        m = json.dumps({"data_dir": str(FIXTURE_DATA), "judge_model": "stub", "judge_base_url": url,
                        "judge_cache": str(tmp_path / "judge.sqlite")})
        env = subprocess_env(OPENAI_API_KEY="local", DOMSUM_GENERATIONS_DIR=str(tmp_path / "generations"))
        proc = harness(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", "ccsbench_focus",
                        "--limit", "2", "--log_samples", "--gen_kwargs", "max_gen_toks=8", "--metadata", m],
                       tmp_path / "out", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [results] = (tmp_path / "out").rglob("results_*.json")
    meta_used = json.loads(results.read_text())["configs"]["ccsbench_focus"]["metadata"]
    # the URL as given is recorded masked; the one used has no key (it went into the header)
    given = meta_used["judge_base_url"]
    assert KEY not in given and ("***" in given or secrets.MASK in given) and meta_used["judge_base_url_used"] == base
    # both forms reach the well-formed path /v1/chat/completions: judged
    assert json.loads(results.read_text())["results"]["ccsbench_focus"]["focus_parse_failures,none"] == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in files) and any("generations" in p.parts for p in files)
    leaked = [str(p) for p in files if KEY.encode() in p.read_bytes()]
    assert leaked == [] and KEY not in proc.stdout + proc.stderr


def test_extra_fields_of_mixed_kinds_are_kept_as_text(tmp_path, tiny_causal_lm):
    rows = [json.dumps({"id": "a", "document": "the cat sat on the mat", "summary": "a cat sat", "meta": {"x": 1}}),
            json.dumps({"id": "b", "document": "dogs bark at night", "summary": "dogs bark", "meta": "plain"}),
            json.dumps({"id": "c", "document": "birds fly south", "summary": "birds fly", "meta": [1, {"y": 2}]})]
    root = _mirror(tmp_path, rows)
    res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", TASK,
                       "--log_samples", "--gen_kwargs", "max_gen_toks=8", "--metadata",
                       json.dumps({"data_dir": str(root), "bertscore_model": minilm_dir(), "bertscore_layers": 6})],
                      tmp_path / "out")
    meta_used = res["configs"][TASK]["metadata"]
    assert meta_used["fields_as_text"] == ["meta"] and res["results"][TASK]["sample_len"] == 3
    [samples] = (tmp_path / "out").rglob(f"samples_{TASK}_*.jsonl")
    docs = [json.loads(line)["doc"] for line in samples.read_text().splitlines()]
    assert sorted(d["meta"] for d in docs) == sorted(['{"x": 1}', "plain", '[1, {"y": 2}]'])


def test_a_full_text_task_on_intro_conclusion_data_is_one_line(tiny_causal_lm, tmp_path):
    """CCSBench's hub release and most mirrors hold only the introduction and conclusion: the
    _fulltext task ends with one line naming the task, the file, the fields and the fix, writes
    no results and never falls back to the I+C text."""
    data = tmp_path / "mirror"
    for split in ("train", "validation", "test"):
        src = FIXTURE_DATA / "ccsbench" / "compositional" / f"{split}.jsonl"
        rows = [{k: v for k, v in json.loads(line).items() if k != "full_text"}
                for line in src.read_text(encoding="utf-8").splitlines()]
        dst = data / "ccsbench" / "compositional" / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    task = "ccsbench_compositional_fulltext"
    proc = harness(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}", "--tasks", task,
                    "--limit", "1", "--metadata", json.dumps({"data_dir": str(data)})], tmp_path / "out")
    line = one_error_line(proc, "no full-text column")  # said by the data check, before the model loads
    assert f"task '{task}': {data / 'ccsbench' / 'compositional' / 'test.jsonl'}, line 1: no full-text column" in line
    assert "['full_text', 'fulltext', 'full_document', 'paper_text', 'body_text', 'full_paper']" in line
    assert "add a 'full_text' field" in line and "column_map" in line
    assert not list(tmp_path.rglob("results_*.json"))
