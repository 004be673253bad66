"""The meta-evaluation HTML page: one table per level with CI and n, the significance
matrix, agreement tables, figures with alt text, and links that resolve."""

from __future__ import annotations

import math
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from custom_metrics.analysis import meta_eval, plots
from custom_metrics.analysis.meta_eval.page_data import page_data
from lm_eval_tasks.commands import meta_eval as meta_eval_command
from lm_eval_tasks.report.meta_eval_page import write_page

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "meta_eval"


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.imgs: list[dict] = []
        self.h3: list[str] = []
        self._in_h3 = False
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if tag == "img":
            self.imgs.append(a)
        self._in_h3 = tag == "h3"

    def handle_endtag(self, tag):
        if tag == "h3":
            self._in_h3 = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_h3:
            self.h3.append(data)


def _parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def ratings_summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("med")
    s = meta_eval.run(FIX / "medqsum_scores.csv", out, ratings=FIX / "medqsum_ratings.csv", n_boot=50,
                      consensus="median")
    return out, s


def test_page_data_shape(ratings_summary):
    _, s = ratings_summary
    data = page_data(s)
    assert [lv["label"] for lv in data["levels"]] == ["summary", "system", "global"]
    row = data["levels"][0]["rows"][0]
    assert set(row) == {"metric", "human", "coefficient", "level", "r", "ci_low", "ci_high", "n"}
    assert {r["human"] for r in data["levels"][0]["rows"]} >= {"overall rating", "fluency (median consensus)"}
    # FM's Figure 3: the metric matrix is global Pearson
    assert data["heatmap"]["coefficient"] == "pearson" and data["heatmap"]["level"] == "global"
    assert data["heatmap"]["labels"][-1] == "human"
    assert [sc["label"] for sc in data["scatter"]] == ["summary", "system", "global"]
    sig = data["significance"]  # run's paired test: permutation, global Pearson by default
    assert (sig["test"], sig["level"], sig["coefficient"]) == ("permutation", "global", "pearson")
    assert sig["metrics"] == list(s["metrics"])
    assert any("median" in f for f in data["facts"])


def test_page_tables_figures_alt_text_and_links(ratings_summary):
    out, s = ratings_summary
    page = _parse(write_page(out, s))
    titles = " | ".join(page.h3)
    for level in ("global", "summary", "system"):
        assert f"Metric vs human, {level} level" in titles
    assert "Krippendorff's alpha" in titles and "Cohen's kappa" in titles
    text = " ".join(page.text)
    assert "95% CI" in text and "Spearman rho" in text and "Pearson r" in text
    assert "No metric-vs-metric test was run." not in text
    assert len(page.imgs) == 4  # heat map + a scatter per level
    for img in page.imgs:
        assert img["src"].startswith("data:image/png;base64,") and len(img["alt"]) > 30
    alts = [img["alt"] for img in page.imgs]
    assert any("Heat map of the Pearson r" in a and "global level" in a for a in alts)
    assert sum("Scatter plots" in a for a in alts) == 3
    internal = [h[1:] for h in page.hrefs if h.startswith("#")]
    assert internal and all(h in page.ids for h in internal), set(internal) - page.ids


def test_page_shows_a_significance_matrix_when_the_run_has_one(ratings_summary, tmp_path):
    _, s = ratings_summary
    metrics = list(s["metrics"])
    p = pd.DataFrame([[math.nan if a == b else (0.01 if a < b else 0.4) for b in metrics] for a in metrics],
                     index=metrics, columns=metrics)
    p.attrs.update(test="paired permutation test", coefficient="kendall", level="system")
    page = _parse(write_page(tmp_path, {**s, "significance": p}))
    text = " ".join(page.text)
    assert "paired permutation test on the Kendall tau" in text and "system level" in text
    assert "0.010*" in text and "0.400" in text and "No metric-vs-metric test" not in text


def test_command_writes_the_page_for_a_summeval_file(tmp_path, capsys):
    out = tmp_path / "se"
    rc = meta_eval_command.main([str(FIX / "summeval_aligned.jsonl"), "--format", "summeval", "--out", str(out),
                                 "--bootstrap", "20", "--consensus", "majority", "--no-progress"])
    assert rc == 0
    assert f"HTML page: {out / 'meta_eval.html'}" in capsys.readouterr().out
    page = _parse(out / "meta_eval.html")
    assert "rouge_l_f_score" in " ".join(page.text) and all(img["alt"] for img in page.imgs)


def test_command_rejects_unknown_column_keys(tmp_path):
    with pytest.raises(SystemExit):
        meta_eval_command.main([str(FIX / "medqsum_scores.csv"), "--out", str(tmp_path), "--columns", "paper=x"])


def test_scatter_needs_a_finite_pair(tmp_path):
    with pytest.raises(plots.NothingToPlot):
        plots.scatter_plot(tmp_path / "s.png", "t", [("m", [math.nan, 1.0], [2.0, math.nan])])
    assert not (tmp_path / "s.png").exists()
    fig = plots.scatter_figure("t", [("a", [1, 2, 3], [1, 2, 2]), ("b", [1, 2], [2, 1])])
    assert [ax.get_title() for ax in fig.axes if ax.axison] == ["a", "b"]


def test_command_puts_medqsum_published_correlations_beside_the_run(tmp_path):
    """medqsum Tables 3 and 5 beside the run's global Pearson r (x100) of the same metric,
    aspect and annotator: the published cell as the data file has it, the run's value
    recomputed from the inputs, and the check naming the samples and pairs counted here."""
    import json

    import numpy as np

    out = tmp_path / "med"
    rc = meta_eval_command.main([str(FIX / "medqsum_scores.csv"), "--ratings", str(FIX / "medqsum_ratings.csv"),
                                 "--out", str(out), "--bootstrap", "0", "--no-progress"])
    assert rc == 0
    records = json.loads((out / "summary.json").read_text(encoding="utf-8"))["published"]
    data = json.loads((Path(__file__).resolve().parents[2] / "lm_eval_tasks" / "published"
                       / "medqsum.json").read_text(encoding="utf-8"))
    scores = pd.read_csv(FIX / "medqsum_scores.csv")
    ratings = pd.read_csv(FIX / "medqsum_ratings.csv", keep_default_na=False)
    metrics = [c for c in scores.columns if c not in ("doc_id", "system")]
    # every metric column x 3 per-summary aspects x 2 annotators x Tables 3 and 5
    assert len(records) == len(metrics) * 3 * 2 * 2
    assert {r["table"] for r in records} == {"Table 3", "Table 5"}
    for r in records:
        cell = [v for v in data["values"] if (v["table"], v["row"], v["column"]) == (r["table"], r["row"], r["column"])]
        assert len(cell) == 1 and r["published"] == cell[0]["value"], r["cite"]
        metric, _, rest = r["label"].partition(" vs ")
        aspect, _, who = rest.partition(", annotator ")
        assert (cell[0]["scored_metric"], cell[0]["aspect"], f"ann{cell[0]['annotator']}") == (metric, aspect, who)
        mine = ratings[(ratings["annotator"] == who) & (ratings["aspect"] == aspect)][["doc_id", "system", "rating"]]
        pairs = scores.merge(mine, on=["doc_id", "system"])[[metric, "rating"]].astype(float).dropna()
        assert r["run_value"] == pytest.approx(np.corrcoef(pairs[metric], pairs["rating"])[0, 1] * 100, abs=1e-9)
        diffs = {d["field"]: d for d in r["differences"]}
        assert diffs["correlation pairs"]["run"] == len(pairs) == 24
        assert diffs["test documents"]["run"] == scores["doc_id"].nunique() and diffs["test documents"]["paper"] == 500
        assert diffs["correlation function"]["run"] == "pearson" and "unknown" in diffs["correlation function"]["paper"]
        if metric.startswith("bertscore"):
            assert "unknown" in diffs["correlation bertscore_encoders"]["paper"]
        assert r["comparable"] is False and f"{len(pairs)} (paper: every (sample, summary) pair" in r["sentence"]
    first = records[0]
    md = (out / "meta_eval.md").read_text(encoding="utf-8")
    assert f"{first['published']:.2f} (published)" in md and first["cite"] in md and first["sentence"] in md
    page = " ".join(_parse(out / "meta_eval.html").text)
    assert "Beside the published correlations" in page and f"{first['published']:.2f} (published)" in page
    assert first["sentence"] in page


def test_no_medqsum_correlations_beside_another_study(tmp_path):
    """Another study's release, or a run naming another benchmark, gets no medqsum value beside it."""
    import json

    out = tmp_path / "se"
    assert meta_eval_command.main([str(FIX / "summeval_aligned.jsonl"), "--format", "summeval", "--out", str(out),
                                   "--bootstrap", "0", "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["published"] == []
    other = tmp_path / "other"
    assert meta_eval_command.main([str(FIX / "medqsum_scores.csv"), "--ratings", str(FIX / "medqsum_ratings.csv"),
                                   "--out", str(other), "--bootstrap", "0", "--no-progress",
                                   "--benchmark", "domainsum"]) == 0
    assert json.loads((other / "summary.json").read_text(encoding="utf-8"))["published"] == []
    assert "Beside the published correlations" not in (other / "meta_eval.md").read_text(encoding="utf-8")
