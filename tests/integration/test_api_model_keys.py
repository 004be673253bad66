"""A key in an API model's URL reaches the server and nothing else.

The real harness CLI evaluates a ``domsum new-task`` domain with ``--model
local-chat-completions`` against the stub server on 127.0.0.1, its ``base_url`` carrying
the key twice (user-info ``http://user:KEY@host`` and query ``?api_key=KEY``), with
``--log_samples``, ``--output_path`` and the generation journal on. Every file the run
wrote (results, samples, journal lines and identity card, the task folder) and every line
it printed is searched for the key; the server's log shows the model still sent it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import subprocess_env
from helpers.judge_server import JUDGE_ENV, StubJudgeServer, Text
from lm_eval_tasks.runtime import HARNESS_CLI

pytestmark = pytest.mark.slow

KEY = "sk-url-0123456789abcdef"
COMMANDS = {"domsum run": list(HARNESS_CLI), "lm_eval": [sys.executable, "-m", "lm_eval"]}
#: the line plain ``lm_eval`` logs before it has loaded any task, so before any module of
#: the suite is imported: masked by the start-up line the installation writes
#: (lm_eval_tasks/build_hooks.py), as ``domsum run`` masks it
PRE_SUITE_LINE = "Initializing local-chat-completions model, with arguments:"


def _env(**extra: str) -> dict[str, str]:
    return {k: v for k, v in subprocess_env(**extra).items() if k not in JUDGE_ENV}


def _task_folder(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for split, n in (("test", 3), ("train", 4)):
        rows = [{"document": f"Ship {i} of the {split} fleet docked at the port after a long voyage.",
                 "summary": f"Ship {i} docked."} for i in range(n)]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    made = subprocess.run([*HARNESS_CLI[:-1], "new-task", "harbour", "--data", str(data), "--out",
                           str(tmp_path / "tasks"), "--families", "rouge"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    return tmp_path / "tasks"


def _files_with_key(*folders: Path) -> list[str]:
    forms = [KEY.encode(), quote(KEY, safe="").encode()]
    return sorted(str(p) for folder in folders for p in folder.rglob("*")
                  if p.is_file() and any(f in p.read_bytes() for f in forms))


@pytest.mark.parametrize("command,verbosity", [("domsum run", "DEBUG"), ("lm_eval", "INFO")])
def test_a_key_in_the_model_url_is_in_no_file_and_no_printed_line(tmp_path, command, verbosity):
    tasks = _task_folder(tmp_path)
    out, journal = tmp_path / "out", tmp_path / "journal"
    with StubJudgeServer(time_limit_s=300) as srv:
        srv.set_default(Text("Ship docked at the port."))
        host = srv.url.split("://", 1)[1]  # 127.0.0.1:PORT/v1
        url = f"http://user:{KEY}@{host}/chat/completions?api_key={KEY}"
        proc = subprocess.run(
            [*COMMANDS[command], "--model", "local-chat-completions", "--model_args",
             f"model=stub,base_url={url},num_concurrent=1", "--include_path", str(tasks), "--tasks", "harbour",
             "--apply_chat_template", "--log_samples", "--output_path", str(out), "--verbosity", verbosity],
            cwd=tmp_path, env=_env(DOMSUM_GENERATION_JOURNAL=str(journal)), capture_output=True, text=True,
            timeout=600)
        sent = list(srv.requests)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # the model itself still used the key: 3 documents, each request with it in its query
    assert len(sent) == 3 and all(path.endswith(f"?api_key={KEY}") for path, _ in sent), sent

    [results_file] = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    masked = f"http://user:***@{host}/chat/completions?api_key=***"
    assert results["config"]["model_args"]["base_url"] == masked
    assert results["configs"]["harbour"]["metadata"]["base_url"] == masked
    [card] = journal.glob("*/identity.json")
    assert json.loads(card.read_text())["model_args"]["base_url"] == masked
    assert len(list(out.rglob("samples_harbour_*.jsonl"))) == 1 and list(journal.glob("*/rank0.jsonl"))
    assert _files_with_key(out, journal, tasks) == []

    assert KEY not in proc.stdout
    summary = next(line for line in proc.stdout.splitlines() if line.startswith("local-chat-completions ("))
    assert masked in summary
    assert [line for line in proc.stderr.splitlines() if KEY in line] == []
    assert verbosity in proc.stderr  # the log really was at that level
    [first] = [line for line in proc.stderr.splitlines() if PRE_SUITE_LINE in line]
    assert f"user:***@{host}" in first and "api_key=***" in first, first
