"""Interrupted generation resumes, through the real commands and real signals.

A run of ten DomainSum tasks (30 documents) is interrupted once the generation journal
holds some but not all generations: with Ctrl-C (SIGINT) under plain ``lm_eval``, with
SIGTERM under ``domsum run``. The process ends in one line naming how many generations
were kept and where; the same command run again generates only the missing ones (the
journal grows by exactly those, and the results record how many came from it), and its
results and per-document samples equal those of an uninterrupted run with a fresh
journal. A model saved again in place is another model: nothing is served to it.

A sampled run (``do_sample=True,temperature=1.0``) with ``--seed 2`` is served nothing of
the same run with ``--seed 1``; a greedy one is served everything. A run whose journal
cannot grow (a real ``RLIMIT_FSIZE`` on the child: the kernel refuses the write with EFBIG,
as a full disk does with ENOSPC) writes its results and samples anyway; what it committed
before is answered by the next run, and the line the failed write cut does not swallow the
next one.
"""

from __future__ import annotations

import json
import logging
import re
import resource
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
RUN_ONLY = ("generation_journal", "generations_from_journal", "generations_made", "config_source")


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
    assert sum(res["configs"][t]["metadata"]["generations_made"] for t in TASKS) == N_DOCS
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
    assert sum(res["configs"][t]["metadata"]["generations_made"] for t in TASKS) == N_DOCS - kept
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


def _samsum_args(model: Path, data_dir: Path, gen_kwargs: str, seed: int | None = None) -> list[str]:
    return ["--model", "hf", "--model_args", f"pretrained={model}", "--include_path", "lm_eval_tasks",
            "--tasks", "domainsum_samsum", "--predict_only", "--log_samples", "--gen_kwargs", gen_kwargs,
            *(["--seed", str(seed)] if seed is not None else []),
            "--metadata", json.dumps({"data_dir": str(data_dir)})]


def _journal_lines(folder: Path) -> list[str]:
    return [line for path in sorted(folder.glob("*/rank0.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_sampled_generations_are_kept_per_seed_and_greedy_ones_shared(tmp_path, tiny_causal_lm, fixture_data_dir):
    """--seed 1 then --seed 2: sampled, nothing is served to the second; greedy, everything is."""
    n_docs = 3
    for mode, gen_kwargs in (("sampled", "max_gen_toks=16,do_sample=True,temperature=1.0"),
                             ("greedy", "max_gen_toks=16")):
        journal = tmp_path / mode / "journal"
        env = subprocess_env(DOMSUM_GENERATION_JOURNAL=str(journal))
        drawn: dict[int, list] = {}
        for run, seed in enumerate((1, 2, 1)):
            before = len(_journal_lines(journal))
            res = run_lm_eval(_samsum_args(tiny_causal_lm, fixture_data_dir, gen_kwargs, seed),
                              tmp_path / mode / f"run{run}", env=env)
            assert res["config"]["random_seed"] == res["config"]["torch_seed"] == seed  # what the results say
            meta = res["configs"]["domainsum_samsum"]["metadata"]
            made = len(_journal_lines(journal)) - before  # each generation the model made is a new line
            assert (meta["generations_from_journal"], meta["generations_made"]) == (n_docs - made, made), (mode, run)
            drawn.setdefault(seed, [s["resps"] for s in own_samples(tmp_path / mode / f"run{run}",
                                                                    "domainsum_samsum")])
            if mode == "sampled":  # each seed draws its own; the same seed again is served its draws
                assert made == (n_docs if run < 2 else 0), (run, made)
            else:  # greedy: the first run's generations serve every seed
                assert made == (n_docs if run == 0 else 0), (run, made)
        if mode == "sampled":  # the seed changed what was drawn: serving seed 1's would have hidden it
            assert drawn[1] != drawn[2]
        else:
            assert drawn[1] == drawn[2]


def test_a_journal_that_cannot_grow_costs_no_results_and_no_committed_generation(
        tmp_path, tiny_causal_lm, fixture_data_dir, caplog):
    """The journal's file may not grow past the line being written: the run finishes with its
    results; the next run answers every generation committed before, starting a fresh line
    after the cut one; the one after that answers all of them."""
    caplog.set_level(logging.WARNING)
    args = _samsum_args(tiny_causal_lm, fixture_data_dir, "max_gen_toks=16")
    reference = tmp_path / "reference"
    run_lm_eval(args, tmp_path / "ref", env=subprocess_env(DOMSUM_GENERATION_JOURNAL=str(reference)))
    [ref_file] = reference.glob("*/rank0.jsonl")
    first, second, last = ref_file.read_text(encoding="utf-8").splitlines()  # in the order generated
    expected = {s["doc_id"]: s["resps"] for s in own_samples(tmp_path / "ref", "domainsum_samsum")}

    # the same model's journal holding its last generation after 1 MiB of other generations (so
    # that every other file the run writes stays under the limit), with room for one more line
    # and half of the next
    journal = tmp_path / "journal"
    path = journal / ref_file.parent.name / "rank0.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copy(ref_file.parent / "identity.json", path.parent / "identity.json")
    other = [json.dumps({"key": f"{i:064x}", "task": "other", "doc_id": i, "response": "x" * 1000})
             for i in range(1024)]
    path.write_text("\n".join([*other, last]) + "\n", encoding="utf-8")
    limit = path.stat().st_size + len(first.encode()) + 1 + len(second.encode()) // 2

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = tmp_path / "full"
    env = subprocess_env(DOMSUM_GENERATION_JOURNAL=str(journal))
    proc = subprocess.run([sys.executable, "-m", "lm_eval", *args, "--output_path", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, preexec_fn=limited)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-4000:]
    assert re.search(rf"generation journal {re.escape(str(path))} cannot be written \(\[Errno 27\] File too large\); "
                     r"this run goes on without it", proc.stderr), proc.stderr[-4000:]
    meta = _results(out)["configs"]["domainsum_samsum"]["metadata"]
    assert meta["generation_journal"].startswith(f"failed: {path}: [Errno 27]")
    assert (meta["generations_from_journal"], meta["generations_made"]) == (1, 2)
    assert {s["doc_id"]: s["resps"] for s in own_samples(out, "domainsum_samsum")} == expected
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[-3:-1] == [last, first] and lines[-1] == second[:len(lines[-1])] != second  # cut mid-line

    for run, served in (("rerun", 2), ("again", 3)):
        caplog.clear()
        res = run_lm_eval(args, tmp_path / run, env=env)
        meta = res["configs"]["domainsum_samsum"]["metadata"]
        assert (meta["generations_from_journal"], meta["generations_made"]) == (served, 3 - served), run
        assert meta["generation_journal"] == str(path.parent)
        assert {s["doc_id"]: s["resps"] for s in own_samples(tmp_path / run, "domainsum_samsum")} == expected
        said = [r.getMessage() for r in caplog.records if "unreadable line(s)" in r.getMessage()]
        assert len(said) == 1 and " 1 unreadable line(s)" in said[0], (run, said)
    # the generation made after the cut line has a line of its own
    assert path.read_text(encoding="utf-8").splitlines()[-2:] == [second[:len(lines[-1])], second]
