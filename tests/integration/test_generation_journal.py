"""Interrupted generation resumes, through the real commands and real signals.

A run of ten DomainSum tasks (30 documents) is interrupted once the generation journal
holds some but not all generations: with Ctrl-C (SIGINT) under plain ``lm_eval``, with
SIGTERM under ``domsum run``. The process ends in one line naming how many generations
were kept and where; the same command run again generates only the missing ones (the
journal grows by exactly those, and the results record how many came from it), and its
results and per-document samples equal those of an uninterrupted run with a fresh
journal. A model saved again in place is another model: nothing is served to it.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, own_samples, run_lm_eval, same_values, sigint_default, subprocess_env
from lm_eval_tasks.runtime import HARNESS_CLI

pytestmark = pytest.mark.slow

GROUPS = "domainsum_genre,domainsum_style"
TASKS = ("domainsum_cnndm", "domainsum_pubmed", "domainsum_reddit", "domainsum_samsum", "domainsum_wikihow",
         "domainsum_cnn", "domainsum_fox", "domainsum_nydaily", "domainsum_nytimes", "domainsum_wapo")
N_DOCS = 30  # three fixture documents a task
COMMANDS = {"lm_eval": [sys.executable, "-m", "lm_eval"], "domsum run": list(HARNESS_CLI)}
KEPT = re.compile(r"(interrupted|terminated); (\d+) generation\(s\) of this run are kept in the generation "
                  r"journal (\S+); running the same command again resumes, generating only the missing ones\.$")
#: task metadata about the run rather than the documents: the journal's own record, and the
#: YAML's path as this command line spelt its include path
RUN_ONLY = ("generation_journal", "generations_from_journal", "config_source")


def _args(model: Path, data_dir: Path, minilm: str) -> list[str]:
    meta = {"data_dir": str(data_dir), "bertscore_model": minilm, "bertscore_layers": 6}
    return ["--model", "hf", "--model_args", f"pretrained={model}", "--include_path", "lm_eval_tasks",
            "--tasks", GROUPS, "--log_samples", "--gen_kwargs", "max_gen_toks=64", "--metadata", json.dumps(meta)]


def _journal_rows(folder: Path) -> list[dict]:
    rows = []
    for path in folder.glob("*/rank*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass  # the line being written right now
    return rows


def _results(out: Path) -> dict:
    [path] = out.rglob("results_*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, tiny_causal_lm, fixture_data_dir, minilm_path) -> Path:
    """The same run, never interrupted, with a journal of its own (nothing to resume from)."""
    out = tmp_path_factory.mktemp("uninterrupted")
    env = subprocess_env(DOMSUM_GENERATION_JOURNAL=str(out / "journal"))
    res = run_lm_eval(_args(tiny_causal_lm, fixture_data_dir, minilm_path), out / "out", env=env)
    assert sum(res["configs"][t]["metadata"]["generations_from_journal"] for t in TASKS) == 0
    return out / "out"


@pytest.mark.parametrize("command,sig", [("lm_eval", signal.SIGINT), ("domsum run", signal.SIGTERM)],
                         ids=["lm_eval-SIGINT", "domsum_run-SIGTERM"])
def test_interrupted_generation_resumes_and_equals_an_uninterrupted_run(
        command, sig, tmp_path, tiny_causal_lm, fixture_data_dir, minilm_path, uninterrupted):
    journal, out = tmp_path / "journal", tmp_path / "out"
    env = subprocess_env(DOMSUM_GENERATION_JOURNAL=str(journal))
    cmd = [*COMMANDS[command], *_args(tiny_causal_lm, fixture_data_dir, minilm_path), "--output_path", str(out)]
    log = tmp_path / "interrupted.log"  # a file, not a pipe: a full pipe would stall the child
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                preexec_fn=sigint_default)
    deadline = time.monotonic() + 300
    while len(_journal_rows(journal)) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before it could be interrupted:\n{log.read_text()[-3000:]}"
    proc.send_signal(sig)
    proc.wait(timeout=120)
    err = log.read_text()
    assert proc.returncode == -sig, (proc.returncode, err[-3000:])  # ended as the signal ends a process
    assert "Traceback" not in err and not list(out.rglob("results_*.json")), err[-3000:]
    said = [m for line in re.split(r"[\r\n]", err) if (m := KEPT.search(line))]
    assert len(said) == 1, err[-3000:]  # one line
    word, kept, where = said[0].group(1), int(said[0].group(2)), Path(said[0].group(3))
    rows = _journal_rows(journal)
    assert word == ("terminated" if sig == signal.SIGTERM else "interrupted")
    assert where == next(journal.glob("*/rank0.jsonl")) and kept == len(rows) == len({(r["task"], r["doc_id"])
                                                                                       for r in rows})
    assert 0 < kept < N_DOCS, kept

    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"generation journal: {kept} of {N_DOCS} requests answered" in done.stderr
    res = _results(out)
    # only the missing generations were made: the journal grew by exactly those
    assert sum(res["configs"][t]["metadata"]["generations_from_journal"] for t in TASKS) == kept
    after = _journal_rows(journal)
    assert len(after) == N_DOCS and {(r["task"], r["doc_id"]) for r in after} == {(t, d) for t in TASKS
                                                                                    for d in range(3)}
    # results and samples equal the uninterrupted run's
    fresh = _results(uninterrupted)
    for task in TASKS:
        a, b = fresh["results"][task], res["results"][task]
        assert set(a) == set(b) and all(same_values(a[k], b[k]) for k in a), (task, a, b)
        meta_a, meta_b = fresh["configs"][task]["metadata"], res["configs"][task]["metadata"]
        differing = {k for k in set(meta_a) | set(meta_b) if k not in RUN_ONLY and not same_values(meta_a.get(k), meta_b.get(k))}
        assert differing <= {"bertscore_reference_cache"}, (task, differing)  # that cache's hits are per run
        ones, twos = own_samples(uninterrupted, task), own_samples(out, task)
        assert [s["doc_id"] for s in ones] == [s["doc_id"] for s in twos] == [0, 1, 2]
        for s, t in zip(ones, twos):
            assert s["resps"] == t["resps"] and s["filtered_resps"] == t["filtered_resps"], (task, s["doc_id"])
            assert s["metrics"] == t["metrics"] and s["metrics"], task
            for key in s["metrics"]:
                assert same_values(s[key], t[key]), (task, s["doc_id"], key, s[key], t[key])


def test_a_model_saved_again_in_place_is_never_served_the_old_generations(tmp_path, tiny_causal_lm,
                                                                          fixture_data_dir):
    """Same command, same path, other weights: every generation is made again."""
    import torch
    from transformers import AutoModelForCausalLM

    model = tmp_path / "model"
    shutil.copytree(tiny_causal_lm, model)
    journal = tmp_path / "journal"
    env = subprocess_env(DOMSUM_GENERATION_JOURNAL=str(journal))
    args = ["--model", "hf", "--model_args", f"pretrained={model}", "--include_path", "lm_eval_tasks",
            "--tasks", "domainsum_samsum", "--predict_only", "--log_samples", "--gen_kwargs", "max_gen_toks=16",
            "--metadata", json.dumps({"data_dir": str(fixture_data_dir)})]

    def run(name: str) -> dict:
        return run_lm_eval(args, tmp_path / name, env=env)["configs"]["domainsum_samsum"]["metadata"]

    first = run("first")
    assert first["generations_from_journal"] == 0 and len(_journal_rows(journal)) == 3
    assert run("again")["generations_from_journal"] == 3  # the same model resumes
    lm = AutoModelForCausalLM.from_pretrained(model)
    with torch.no_grad():
        for p in lm.parameters():
            p.add_(0.5 * torch.randn_like(p))
    lm.save_pretrained(model)
    changed = run("changed")
    assert changed["generations_from_journal"] == 0, changed
    assert changed["generation_journal"] != first["generation_journal"] and len(_journal_rows(journal)) == 6
