"""``judge_sample`` end to end: two systems (a tiny causal LM with two generation budgets, so
two different sets of summaries) evaluated by the real lm_eval CLI on the same eight
AdaptEval PubMed documents, judged by
the stub judge on a sample of three: each run's judge requests name only the sampled
documents, both runs record the same drawn ids, the other five documents are counted as
not sampled (not as failures), and ``judge_max_requests`` set to the sample's cost stops
nothing. A two-rank data-parallel run judges exactly the same three documents."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import FIXTURE_DATA, ROOT, own_samples, run_lm_eval, subprocess_env
from custom_metrics.judge.sample import draw

pytestmark = pytest.mark.slow
TASK = "adapteval_pubmed_judged"
N_DOCS, SAMPLE = 8, 3


@pytest.fixture(autouse=True)
def _fresh_budget():
    from custom_metrics.judge import budget

    budget.reset()
    yield
    budget.reset()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """A mirror whose PubMed test split holds eight distinct documents with ids (the fixture's
    three, each marked ``Case <k>.`` so a judge request names its document), and a vocabulary."""
    root = tmp_path_factory.mktemp("mirror")
    src, dst = FIXTURE_DATA / "adapteval" / "pubmed", root / "adapteval" / "pubmed"
    dst.mkdir(parents=True)
    for split in ("train", "validation"):
        (dst / f"{split}.jsonl").write_text((src / f"{split}.jsonl").read_text())
    base = [json.loads(line) for line in (src / "test.jsonl").read_text().splitlines()]
    rows = [{**base[k % len(base)], "id": f"pm-{k}", "document": f"Case {k}. " + base[k % len(base)]["document"]}
            for k in range(N_DOCS)]
    (dst / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    vocab = root / "vocab"
    proc = subprocess.run([sys.executable, "-m", "lm_eval_tasks.cli", "build-vocab", "--benchmark", "adapteval",
                           "--subsets", "pubmed", "--data-dir", str(root), "--vocab-dir", str(vocab), "--no-progress"],
                          cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root, vocab


def _asked(bodies) -> set[str]:
    """The documents the judge was asked about (the fluency prompt names none)."""
    return {f"pm-{m}" for b in bodies for msg in b["messages"] for m in re.findall(r"Case (\d+)\. ", msg["content"])}


def test_two_systems_are_judged_on_the_same_seeded_sample(tmp_path, mirror, tiny_causal_lm, minilm_path):
    from helpers.judge_server import StubJudgeServer, Text

    from custom_metrics.judge import budget

    root, vocab = mirror
    systems = {"long": "max_gen_toks=12", "short": "max_gen_toks=4"}
    recorded, asked, results = {}, {}, {}
    with StubJudgeServer(time_limit_s=300) as server:
        server.on("Fluency", Text("2"))
        server.set_default(Text("4"))
        for name, gen_kwargs in systems.items():
            server.reset_counts()
            budget.reset()  # the cap counts one process's requests, and both runs share this one
            meta = {"data_dir": str(root), "vocab_dir": str(vocab), "bertscore_model": minilm_path,
                    "bertscore_layers": 6, "judge_model": "stub-judge", "judge_base_url": server.url,
                    "judge_cache": str(tmp_path / f"judge-{name}.sqlite"), "judge_sample": SAMPLE,
                    # three ratings of each of the three sampled documents: the whole run's cap
                    "judge_max_requests": 3 * SAMPLE}
            res = run_lm_eval(["--model", "hf", "--model_args", f"pretrained={tiny_causal_lm}",
                               "--include_path", "lm_eval_tasks", "--tasks", TASK, "--gen_kwargs", gen_kwargs,
                               "--log_samples",
                               "--metadata", json.dumps(meta)],
                              tmp_path / name, env=subprocess_env(OPENAI_API_KEY="test-key"))
            recorded[name] = res["configs"][TASK]["metadata"]
            results[name] = res["results"][TASK]
            asked[name] = (_asked(server.bodies), server.received)
    summaries = {name: [row["filtered_resps"][0] for row in own_samples(tmp_path / name, TASK)] for name in systems}
    assert summaries["long"] != summaries["short"]  # two systems' summaries of the same documents
    ids = [f"pm-{k}" for k in range(N_DOCS)]
    sample = draw(ids, SAMPLE, 42)
    for name in systems:
        meta, r = recorded[name], results[name]
        # the ids in the results: the same draw for both systems, of the eight documents evaluated
        assert meta["judge_sample_ids"] == sample and meta["judge_sample_size"] == SAMPLE
        assert meta["judge_sample_from"] == N_DOCS and meta["judge_sample_seed"] == 42
        assert meta["judge_not_sampled"] == N_DOCS - SAMPLE
        assert meta["settings_used"]["sample_seed"] == {"value": 42, "from": "default"}
        # only the sampled documents were requested, within the cap of the sample's cost
        documents_asked, received = asked[name]
        assert documents_asked == set(sample) and 0 < received <= 3 * SAMPLE
        assert "budget" not in json.dumps(meta.get("judge_failed", {}))
        # the ratings of the judged documents; the rest are no failures
        assert r["judge_parse_failures,none"] == 0
        assert r["coherence,none"] == pytest.approx(4.0) and r["domain_adaptation,none"] == pytest.approx(4.0)
        assert r["fluency,none"] == pytest.approx(2.0)
        assert meta["scored_documents"]["coherence"] == f"{SAMPLE} of {N_DOCS} documents scored"


def test_two_ranks_judge_exactly_the_runs_sample(tmp_path, mirror, minilm_path):
    """Two gloo ranks (documents 0, 2, ... and 1, 3, ...): the sample is drawn over the whole
    run's ids, so the run judges exactly three documents, the ones one process would, and the
    merged results hold the ids once and the not-sampled count of both ranks."""
    from helpers.dp_lm import run_ranks
    from helpers.judge_server import StubJudgeServer, Text

    root, vocab = mirror
    with StubJudgeServer(time_limit_s=400) as server:
        server.on("Fluency", Text("2"))
        server.set_default(Text("4"))
        meta = {"data_dir": str(root), "vocab_dir": str(vocab), "bertscore_model": minilm_path,
                "bertscore_layers": 6, "judge_model": "stub-judge", "judge_base_url": server.url,
                "judge_cache": str(tmp_path / "judge.sqlite"), "judge_sample": SAMPLE,
                "generations_dir": str(tmp_path / "generations")}
        out = run_ranks(tmp_path / "dp", 2, (TASK,), meta, {"tokenizer": minilm_path, "max_length": 2048},
                        subprocess_env(OPENAI_API_KEY="test-key"), gen_kwargs="max_gen_toks=24", timeout=400)
        bodies = list(server.bodies)
    meta = out["results"]["configs"][TASK]["metadata"]
    assert meta["counted_over_ranks"]["ranks"] == 2
    sample = draw([f"pm-{k}" for k in range(N_DOCS)], SAMPLE, 42)
    assert meta["judge_sample_ids"] == sample and meta["judge_sample_size"] == SAMPLE
    assert meta["judge_sample_from"] == N_DOCS and meta["judge_sample_seed"] == 42
    assert meta["judge_not_sampled"] == N_DOCS - SAMPLE
    samples = out["results"]["samples"][TASK]
    assert sorted(s["doc"]["id"] for s in samples) == [f"pm-{k}" for k in range(N_DOCS)]
    judged = {s["doc"]["id"] for s in samples if isinstance(s.get("coherence"), float) and s["coherence"] == 4.0}
    assert judged == set(sample) == _asked(bodies)
    assert out["results"]["results"][TASK]["coherence,none"] == pytest.approx(4.0)
