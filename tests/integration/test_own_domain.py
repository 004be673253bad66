"""A user's own domain end to end, as docs/own_domain.md walks through it.

From a folder outside the repository: ``domsum new-task`` on two JSON-lines files with
the user's own field names, one plain ``python -m lm_eval --include_path FOLDER --tasks
NAME,NAME_2shot`` call, then ``domsum domain-stats`` and ``domsum report`` on it. The
numbers are checked against the logged samples: each reported mean is the mean of the
per-document scores, the document counts are the test file's, DVO is recomputed from
the vocabulary file the run recorded and the logged predictions.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURE_DATA, subprocess_env
from custom_metrics.families.dvo import dvo_scores, read_vocabulary
from lm_eval_tasks.results import task_from_samples_name

pytestmark = pytest.mark.slow

NAME = "newsdesk"


def write_user_data(folder: Path) -> dict[str, list[dict]]:
    """The fixture mirror's CNN/DM and Fox pairs under the user's field names (``text``,
    ``gist``, ``key``), as a user's export would have them."""
    folder.mkdir(parents=True)
    out: dict[str, list[dict]] = {}
    for split, sources in (("test", ("cnndm",)), ("train", ("cnndm", "fox", "cnn"))):
        rows = []
        for src in sources:
            for line in (FIXTURE_DATA / "domainsum" / src / f"{split}.jsonl").read_text().splitlines():
                rec = json.loads(line)
                rows.append({"key": f"{src}-{len(rows)}", "text": rec["document"], "gist": rec["summary"]})
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        out[split] = rows
    return out


def domsum(args: list[str], cwd: Path, env: dict, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def logged(out: Path, task: str) -> list[dict]:
    rows = [json.loads(line) for f in out.rglob("samples_*.jsonl") if task_from_samples_name(f) == task
            for line in f.read_text().splitlines()]
    assert rows, f"no samples of {task} under {out}"
    return rows


def test_own_domain_from_a_fresh_folder(tmp_path, tiny_causal_lm, minilm_path):
    user = tmp_path / "user"
    data = write_user_data(user / "data")
    env = subprocess_env(DOMSUM_VOCAB_DIR=str(tmp_path / "vocab"), DOMSUM_BERTSCORE_MODEL=minilm_path,
                         OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)  # the installed package, as a user has it

    made = domsum(["new-task", NAME, "--data", "data", "--document-field", "text", "--summary-field", "gist",
                   "--id-field", "key", "--out", "my_tasks"], user, env)
    assert made.returncode == 0, made.stderr
    folder = user / "my_tasks"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", f"{NAME}.yaml", f"{NAME}_2shot.yaml",
                                                        "utils.py"]
    assert f"{len(data['test'])} test, {len(data['train'])} train records" in made.stdout

    out = user / "out"
    run = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                          f"pretrained={tiny_causal_lm}", "--include_path", "my_tasks",
                          "--tasks", f"{NAME},{NAME}_2shot", "--log_samples", "--output_path", "out",
                          "--gen_kwargs", "max_gen_toks=24"],
                         cwd=user, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    results = json.loads(next(out.rglob("results_*.json")).read_text())

    for task, shots in ((NAME, 0), (f"{NAME}_2shot", 2)):
        rows = logged(out, task)
        assert sorted(r["doc"]["id"] for r in rows) == sorted(r["key"] for r in data["test"])
        assert results["n-samples"][task]["effective"] == len(data["test"])
        assert results["n-shot"][task] == shots
        for key in ("rouge1", "rougeL", "bertscore_f1", "dvo"):
            assert results["results"][task][f"{key},none"] == pytest.approx(
                statistics.fmean(r[key] for r in rows), abs=1e-9), (task, key)
            assert math.isfinite(results["results"][task][f"{key}_stderr,none"])
        meta = results["configs"][task]["metadata"]
        assert meta["suite_task"]["benchmark"] == "own" and meta["suite_task"]["subset"] == NAME
        assert meta["data_source"] == str((user / "data" / "test.jsonl").resolve())
        vocab_path = Path(meta["user_vocabulary"]["path"])
        train = (user / "data" / "train.jsonl").resolve()
        stamp = f"{train}:{train.stat().st_size}:{train.stat().st_mtime_ns}"  # the train file's fingerprint
        assert meta["user_vocabulary"]["data_fingerprint"] == stamp
        assert vocab_path == tmp_path / "vocab" / "own" / f"{NAME}-{hashlib.sha256(stamp.encode()).hexdigest()[:12]}.tsv"
        vocab = read_vocabulary(vocab_path)
        assert vocab.header["documents"] == len(data["train"])
        preds = [r["filtered_resps"][0] for r in rows]
        assert [r["dvo"] for r in rows] == pytest.approx(dvo_scores([p.strip() for p in preds], vocab.words))
        prompt = rows[0]["arguments"]["gen_args_0"]["arg_0"]
        if shots:
            assert prompt.count("Summary:") == 3 and len(rows[0]["doc"]["demo_ids"]) == 2
            assert rows[0]["doc"]["id"] not in rows[0]["doc"]["demo_ids"]
        else:
            assert prompt.startswith("You are an expert at summarization.") and prompt.endswith("SUMMARY:")
    # the vocabulary was built once, by the first task, and reused by the second
    built = [results["configs"][t]["metadata"]["user_vocabulary"]["built"] for t in (NAME, f"{NAME}_2shot")]
    assert sorted(built) == [False, True]

    stats = domsum(["domain-stats", "--include_path", "my_tasks", "--out", "stats", "--no-plots", "--quiet",
                    "--workers", "1"], user, env)
    assert stats.returncode == 0, stats.stderr
    assert f"| own | {NAME} | {len(data['test'])} |" in stats.stdout, stats.stdout
    assert NAME in json.loads((user / "stats" / "domain_stats.json").read_text())["domains"]

    report = domsum(["report", "out", "--out", "report"], user, env)
    assert report.returncode == 0, report.stderr
    html = (user / "report" / "report.html").read_text()
    assert "Your own domains" in html and NAME in html


def test_run_names_a_missing_task_and_bad_data_before_the_model_loads(tmp_path, tiny_causal_lm):
    user = tmp_path / "user"
    write_user_data(user / "data")
    env = subprocess_env()
    assert domsum(["new-task", NAME, "--data", "data", "--document-field", "text", "--summary-field", "gist",
                   "--out", "my_tasks"], user, env).returncode == 0
    model = ["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}"]

    typo = domsum(["run", *model, "--include_path", "my_tasks", "--tasks", f"{NAME}x,domainsum_cnndmm"], user, env)
    assert typo.returncode == 2
    lines = typo.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in typo.stderr, typo.stderr
    assert f"task(s) not found: {NAME}x, domainsum_cnndmm" in lines[0]
    assert NAME in lines[0].split("did you mean", 1)[1] and "domainsum_cnndm" in lines[0]
    assert "--include_path" in lines[0]

    (user / "data" / "test.jsonl").unlink()
    wrong = domsum(["run", *model, "--include_path", "my_tasks", "--tasks", f"{NAME},domainsum_cnndm",
                    "--metadata", json.dumps({"data_dir": str(tmp_path / "nowhere")})], user, env)
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr, wrong.stderr
    assert "stopping before the model loads" in wrong.stderr
    assert "Initializing hf model" not in wrong.stderr
    assert str(user / "data" / "test.jsonl") in wrong.stderr
    assert str(tmp_path / "nowhere" / "domainsum" / "cnndm" / "test.jsonl") in wrong.stderr


def test_a_moved_task_folder_reads_its_own_data_from_any_directory(tmp_path, tiny_causal_lm):
    """The folder holding the task folder and its data, copied elsewhere with the original
    removed, runs with plain ``lm_eval`` from an unrelated directory: every split is read
    from the copy (the YAML names the data relative to itself), not from the directory
    the run starts in, which holds a ``data`` folder of its own."""
    share = tmp_path / "share"
    data = write_user_data(share / "data")
    env = subprocess_env(DOMSUM_VOCAB_DIR=str(tmp_path / "vocab"), OMP_NUM_THREADS="1")
    made = domsum(["new-task", NAME, "--data", "data", "--document-field", "text", "--summary-field", "gist",
                   "--id-field", "key", "--families", "rouge,dvo", "--out", "my_tasks"], share, env)
    assert made.returncode == 0, made.stderr
    assert 'test: "../data/test.jsonl"' in (share / "my_tasks" / f"{NAME}.yaml").read_text()

    moved = tmp_path.resolve() / "elsewhere" / "copied"
    shutil.copytree(share, moved)
    shutil.rmtree(share)
    test_lines = (moved / "data" / "test.jsonl").read_text().splitlines()[:2]  # the copy, edited: 2 documents
    (moved / "data" / "test.jsonl").write_text("".join(line + "\n" for line in test_lines))
    write_user_data(tmp_path / "data")  # what `../data` would be from the run's directory
    (tmp_path / "cwd").mkdir()

    run = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                          f"pretrained={tiny_causal_lm}", "--include_path", str(moved / "my_tasks"),
                          "--tasks", f"{NAME},{NAME}_2shot", "--log_samples", "--output_path", "out",
                          "--gen_kwargs", "max_gen_toks=8"],
                         cwd=tmp_path / "cwd", env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-4000:]
    out = tmp_path / "cwd" / "out"
    results = json.loads(next(out.rglob("results_*.json")).read_text())
    train = moved / "data" / "train.jsonl"
    train_keys = {json.loads(line)["key"] for line in train.read_text().splitlines()}
    for task in (NAME, f"{NAME}_2shot"):
        rows = logged(out, task)
        assert results["n-samples"][task]["effective"] == len(rows) == len(test_lines) == 2
        assert sorted(r["doc"]["id"] for r in rows) == sorted(json.loads(line)["key"] for line in test_lines)
        meta = results["configs"][task]["metadata"]
        assert meta["data_source"] == str(moved / "data" / "test.jsonl")
        # the results name the files read, absolute, for readers far from the YAML
        assert results["configs"][task]["dataset_kwargs"]["data_files"] == {
            "test": str(moved / "data" / "test.jsonl"), "train": str(train)}
        stamp = f"{train}:{train.stat().st_size}:{train.stat().st_mtime_ns}"  # DVO's vocabulary: the copy's train file
        assert meta["user_vocabulary"]["data_fingerprint"] == stamp
        assert read_vocabulary(Path(meta["user_vocabulary"]["path"])).header["documents"] == len(data["train"])
        if task.endswith("_2shot"):  # demonstrations from the copy's train split
            assert all(len(r["doc"]["demo_ids"]) == 2 and set(r["doc"]["demo_ids"]) <= train_keys for r in rows)
