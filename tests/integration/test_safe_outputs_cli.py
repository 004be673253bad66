"""Outputs are never lost, never leak a key, never hide behind a traceback: the real
``domsum`` in subprocesses, a file-size limit (``ulimit -f``), two concurrent writers,
and the stub judge server on 127.0.0.1 with keys in its URL."""

from __future__ import annotations

import csv
import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import subprocess_env
from helpers.judge_server import JUDGE_ENV, StubJudgeServer, Text
from helpers.report_page import write_system

SAMPLES = "samples_adapteval_pubmed_2024-06-01T10-20-30.jsonl"
KEY = "sk-test-0123456789abcdef"


def _domsum(*args: str, cwd: Path, env: dict | None = None, fsize: int | None = None,
            mask: int | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("domsum")
    assert exe.is_file(), "the domsum console script is missing: pip install -e ."

    def limits() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if mask is not None:
            os.umask(mask)

    return subprocess.run([str(exe), *args], cwd=cwd, env=env or _env(), capture_output=True, text=True,
                          timeout=300, preexec_fn=limits)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in subprocess_env(**extra).items() if k not in JUDGE_ENV or k in extra}
    return env


def _samples(folder: Path, n: int = 3, words: int = 20) -> Path:
    path = folder / SAMPLES
    path.write_text("".join(json.dumps({
        "doc_id": i, "doc": {"id": f"adapteval/pubmed/test/{i}", "document": f"Trial {i} of drug A.",
                             "summary": "Drug A helped."},
        "target": "Drug A helped.", "filtered_resps": [" ".join(["drug A helped patients"] * words)],
        "filter": "none"}) + "\n" for i in range(n)))
    return path


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2 and lines, (proc.returncode, proc.stderr)
    return lines[-1]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith((".partial", ".lock")) or ".partial" in p.name)


def test_a_file_size_limit_is_one_line_and_leaves_no_partial(tmp_path):
    samples = _samples(tmp_path, n=40, words=60)  # scores rows hold the texts: well over 8 KiB
    proc = _domsum("rescore", str(samples), "--metrics", "rouge", "--out", "o", "--no-progress", cwd=tmp_path,
                   fsize=8192)
    line = _one_line(proc)
    assert "cannot write o/" in line and "file-size limit" in line, line
    assert _leftovers(tmp_path) == [] and not (tmp_path / "o" / f"{samples.stem}.scores.jsonl").exists()
    # without the limit the same command writes both files
    ok = _domsum("rescore", str(samples), "--metrics", "rouge", "--out", "o", "--no-progress", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert len((tmp_path / "o" / f"{samples.stem}.scores.jsonl").read_text().splitlines()) == 40


def test_a_file_size_limit_while_drawing_the_report_is_one_line(tmp_path):
    write_system(tmp_path / "runs", "m", {"cnndm": 0.3, "pubmed": 0.2}, n_docs=5)
    proc = _domsum("report", "runs", "--out", "r", "--no-progress", cwd=tmp_path, fsize=16384)
    line = _one_line(proc)
    assert "cannot write r" in line and "file-size limit" in line, line
    assert not (tmp_path / "r").exists() and _leftovers(tmp_path) == []


def test_two_concurrent_rescores_into_one_output_one_refuses(tmp_path):
    samples = _samples(tmp_path)
    with StubJudgeServer(latency_s=1.5, serialize=True, time_limit_s=200) as srv:
        srv.set_default(Text("4"))
        args = ["rescore", str(samples), "--metrics", "coherence", "--judge-model", "stub-judge",
                "--judge-base-url", srv.url, "--judge-cache", "off", "--judge-concurrency", "1",
                "--out", "o", "--no-progress"]
        exe = str(Path(sys.executable).with_name("domsum"))
        env = _env(OPENAI_API_KEY=KEY)
        procs = [subprocess.Popen([exe, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p.wait(timeout=200), *p.communicate()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], results
    loser = next(r for r in results if r[0] == 2)
    assert "Traceback" not in loser[2]
    line = [x for x in loser[2].splitlines() if x.strip()][-1]
    assert "being written by another process" in line or "already exists" in line, line
    winner_scores = [json.loads(x) for x in (tmp_path / "o" / f"{samples.stem}.scores.jsonl").read_text().splitlines()]
    assert [s["coherence"] for s in winner_scores] == [4.0, 4.0, 4.0]
    assert srv.received == 3  # the loser refused before it paid for one judge call
    assert _leftovers(tmp_path) == []


def _long_table(path: Path, systems: list[str]) -> Path:
    rows = [{"doc_id": f"d{d}", "system": s, "+cmd": (d * 7 + i * 3) % 5 + 0.1 * i,
             "m2": (d * 3 + i) % 4 - 0.5, "human": (d + i * 2) % 5}
            for d in range(6) for i, s in enumerate(systems)]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def test_meta_eval_refuses_to_replace_an_earlier_analysis_and_neutralises_names(tmp_path):
    systems = ['=HYPERLINK("http://x","y")', "B|C", "-sys", "plain"]
    table = _long_table(tmp_path / "t.csv", systems)
    args = ["meta-eval", str(table), "--format", "long", "--bootstrap", "20", "--out", "m", "--no-progress"]
    first = _domsum(*args, cwd=tmp_path, mask=0o022)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "m"
    assert stat.S_IMODE(out.stat().st_mode) == 0o755  # the umask's, not mkdtemp's 0700
    before = (out / "summary.json").read_bytes()
    again = _domsum(*args, cwd=tmp_path)
    line = _one_line(again)
    assert "not empty" in line and "--overwrite" in line
    assert (out / "summary.json").read_bytes() == before and _leftovers(tmp_path) == []
    assert _domsum(*args, "--overwrite", cwd=tmp_path).returncode == 0

    with (out / "rankings.csv").open(newline="") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    for name in systems:
        expected = "'" + name if name[0] in "=-" else name
        assert expected in cells, (name, cells)
    # the metric column "+cmd" names rows and columns of every CSV, whatever pandas' dtype for text
    for path in out.glob("*.csv"):
        with path.open(newline="") as fh:
            cells = [c for row in csv.reader(fh) for c in row]
        assert "'+cmd" in cells and not any(c and c[0] in "=+-@" and not _number(c) for c in cells), path
    # a system B|C stays one cell of its Markdown row
    md = (out / "meta_eval.md").read_text()
    row = next(x for x in md.splitlines() if x.startswith("| B\\|C"))
    assert len(row.replace("\\|", "").split("|")) == len(md.splitlines()[md.splitlines().index(row) - 1]
                                                        .replace("\\|", "").split("|"))


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_report_folders_follow_the_umask_and_csvs_are_neutralised(tmp_path):
    write_system(tmp_path / "runs", "=SUM(1+1)", {"cnndm": 0.3}, shots=(0,), n_docs=5)
    proc = _domsum("report", "runs", "--out", "r", "--no-plots", "--no-progress", cwd=tmp_path, mask=0o022)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "r" / "scores.csv").stat().st_mode) == 0o644
    with_name = 0
    for path in [tmp_path / "r" / "scores.csv", *(tmp_path / "r" / "tables").glob("*.csv")]:
        with path.open(newline="") as fh:
            cells = [c for row in csv.reader(fh) for c in row]
        assert "=SUM(1+1)" not in cells, path
        with_name += "'=SUM(1+1)" in cells
    assert with_name >= 2  # scores.csv and the score table name the system


def test_a_model_folder_named_as_html_is_text_in_every_markdown_file(tmp_path):
    from markdown_it import MarkdownIt

    name = "x|<img src=x onerror=alert(1)>"
    write_system(tmp_path / "runs", name, {"cnndm": 0.3, "pubmed": 0.2}, n_docs=5)
    write_system(tmp_path / "runs", "plain", {"cnndm": 0.25, "pubmed": 0.22}, n_docs=5)
    proc = _domsum("report", "runs", "--out", "r", "--no-plots", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    viewer = MarkdownIt("commonmark").enable("table")  # passes inline HTML through, as most viewers do
    pages = [tmp_path / "r" / "report.md", *sorted((tmp_path / "r" / "tables").glob("*.md"))]
    named = []
    for page in pages:
        tokens = viewer.parse(page.read_text(encoding="utf-8"))
        inline = [c for t in tokens if t.type == "inline" for c in t.children]
        assert not [t for t in [*tokens, *inline] if t.type in ("html_block", "html_inline")], page
        if any(name in "".join(c.content for c in t.children) for t in tokens if t.type == "inline"):
            named.append(page.name)  # the name is there, read back as the text it is
    assert "report.md" in named and len(named) >= 4, named  # its cells and verdicts; the tables naming it


def test_a_non_numeric_logged_score_names_file_line_and_key(tmp_path):
    write_system(tmp_path / "runs", "m", {"cnndm": 0.3}, shots=(0,), n_docs=5)
    path = next((tmp_path / "runs").rglob("samples_*.jsonl"))
    lines = path.read_text().splitlines()
    rec = json.loads(lines[2])
    rec["rouge1"] = "abc"
    lines[2] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    proc = _domsum("report", "runs", "--out", "r", "--no-plots", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path.name}, line 3, key 'rouge1': the score \"abc\" is not a number" in proc.stdout


@pytest.mark.parametrize("url_form", ["userinfo", "query"])
def test_a_key_in_the_judge_url_is_sent_as_bearer_and_never_printed(tmp_path, url_form):
    samples = _samples(tmp_path, n=2)
    with StubJudgeServer(time_limit_s=120) as srv:
        srv.set_default(Text("4"))
        host = srv.url.split("://", 1)[1]
        url = f"http://user:{KEY}@{host}" if url_form == "userinfo" else f"{srv.url}?api_key={KEY}"
        proc = _domsum("rescore", str(samples), "--metrics", "coherence", "--judge-model", "stub-judge",
                       "--judge-base-url", url, "--judge-cache", "off", "--no-progress", cwd=tmp_path)
        requests = list(srv.requests)
    assert proc.returncode == 0, proc.stderr
    assert KEY not in proc.stderr and KEY not in proc.stdout
    assert "HTTP Request: POST" in proc.stderr  # httpx's INFO line is there, without the key
    assert requests and all(p == "/v1/chat/completions" and a == f"Bearer {KEY}" for p, a in requests), requests
    written = (tmp_path / f"{samples.stem}.summary.json").read_text()
    assert KEY not in written


@pytest.mark.parametrize("bad", [KEY + "\u00a0", KEY + "\r", " " + KEY])
def test_a_malformed_key_is_one_line_naming_the_variable_before_any_request(tmp_path, bad):
    samples = _samples(tmp_path, n=1)
    with StubJudgeServer(time_limit_s=60) as srv:
        proc = _domsum("rescore", str(samples), "--metrics", "coherence", "--judge-model", "stub-judge",
                       "--judge-base-url", srv.url, "--judge-cache", "off", "--no-progress", cwd=tmp_path,
                       env=_env(OPENAI_API_KEY=bad))
        assert srv.received == 0
    line = _one_line(proc)
    assert "$OPENAI_API_KEY" in line and KEY not in proc.stderr, line
