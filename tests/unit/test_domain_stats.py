"""domsum domain-stats: Table 5 files, radar and heat-map PNGs, groups, workers, bad input."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import nltk
import pytest

from custom_metrics.analysis import plots
from custom_metrics.analysis.measures import MEASURES, domain_measures
from lm_eval_tasks import catalog
from lm_eval_tasks.data.loader import load_split
from custom_metrics.analysis import domains
from lm_eval_tasks.analysis import domain_stats as stats
from lm_eval_tasks.commands import domain_stats as ds
from helpers.images import assert_png


@pytest.fixture(scope="module")
def genre_run(fixture_data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("stats_genre")
    rc = ds.main(["--level", "genre", "--data-dir", str(fixture_data_dir), "--out", str(out),
                  "--workers", "1", "--quiet"])
    assert rc == 0
    return out


def test_table_files_match_library(genre_run, fixture_data_dir):
    out = genre_run
    rows = list(csv.DictReader(open(out / "domain_stats.csv", encoding="utf-8")))
    assert [r["domain"] for r in rows] == list(stats.LEVELS["genre"])
    payload = json.loads((out / "domain_stats.json").read_text())
    assert payload["profile"] == "domainsum" and payload["splits"] == ["test"]
    assert payload["tokenizer"] == "nltk"
    assert payload["tokenizer_info"]["nltk_version"] == nltk.__version__
    for r in rows:
        recs = load_split("domainsum", r["domain"], "test", data_dir=fixture_data_dir)
        lib = domain_measures([x["document"] for x in recs], [x["summary"] for x in recs])
        for key in (*MEASURES, "doc_length_std", "summary_length_std"):
            assert float(r[key]) == lib[key], (r["domain"], key)  # identical, not close
            assert payload["domains"][r["domain"]][key] == lib[key]
        assert int(r["n_pairs"]) == len(recs) and int(r["n_used"]) == lib["n_used"]
    md = (out / "domain_stats.md").read_text()
    assert "| Level | Domain | Pairs | Doc length |" in md
    assert "tokenizer `nltk`" in md
    assert md.count("| genre |") == len(stats.LEVELS["genre"])
    assert "Vocabulary overlap (%), genre:" in md
    assert payload["group_by"] == "level" and payload["groups"] == {"genre": list(stats.LEVELS["genre"])}
    assert payload["notes"] == [] and "notes" not in md


def test_vocab_overlap_outputs(genre_run):
    out = genre_run
    payload = json.loads((out / "domain_stats.json").read_text())
    ov = payload["vocab_overlap"]["genre"]
    assert ov["domains"] == list(stats.LEVELS["genre"])
    m, n = ov["matrix"], len(stats.LEVELS["genre"])
    assert len(m) == n
    for i in range(n):
        assert m[i][i] == 100.0
        for j in range(n):
            assert 0 <= m[i][j] <= 100 and m[i][j] == m[j][i]
    rows = list(csv.reader(open(out / "vocab_overlap_genre.csv", encoding="utf-8")))
    assert rows[0] == ["domain", *stats.LEVELS["genre"]] and len(rows) == 1 + n


def test_plots_rendered(genre_run):
    assert_png(genre_run / "radar_genre.png")
    assert_png(genre_run / "vocab_overlap_genre.png")
    # the overlap map's colours span the off-diagonal cells, not the 100 % diagonal
    ov = json.loads((genre_run / "domain_stats.json").read_text())["vocab_overlap"]["genre"]
    lo, hi = plots.heatmap_limits(ov["matrix"], ov["domains"], ov["domains"], mask_diagonal=True)
    off = [v for i, row in enumerate(ov["matrix"]) for j, v in enumerate(row) if i != j]
    assert (lo, hi) == (min(off), max(off)) and hi < 100


def test_all_levels_and_newsroom_profile(fixture_data_dir, tmp_path):
    rc = ds.main(["--level", "all", "--data-dir", str(fixture_data_dir), "--out", str(tmp_path),
                  "--workers", "1", "--quiet", "--profile", "newsroom",
                  "--splits", "train,validation,test"])
    assert rc == 0
    for level in stats.LEVELS:
        assert_png(tmp_path / f"radar_{level}.png")
        assert_png(tmp_path / f"vocab_overlap_{level}.png")
    payload = json.loads((tmp_path / "domain_stats.json").read_text())
    assert payload["profile"] == "newsroom"
    assert sorted(payload["domains"]) == sorted(d for level in catalog.DOMAINSUM_LEVELS.values() for d in level)
    assert payload["tokenizer"] == "spacy"  # Newsroom / SummEval data_stats
    assert payload["tokenizer_info"]["spacy_version"]
    cnn = payload["domains"]["cnn"]
    recs = [r for s in ("train", "validation", "test")
            for r in load_split("domainsum", "cnn", s, data_dir=fixture_data_dir)]
    lib = domain_measures([r["document"] for r in recs], [r["summary"] for r in recs],
                          profile="newsroom")
    assert cnn["coverage"] == lib["coverage"] and cnn["density"] == lib["density"]


def test_tokenizer_option_overrides_the_profile(fixture_data_dir, tmp_path):
    rc = ds.main(["--subsets", "cnndm,samsum", "--data-dir", str(fixture_data_dir),
                  "--out", str(tmp_path), "--workers", "1", "--quiet", "--no-plots",
                  "--profile", "newsroom", "--tokenizer", "nltk"])
    assert rc == 0
    payload = json.loads((tmp_path / "domain_stats.json").read_text())
    assert payload["tokenizer"] == "nltk" and payload["tokenizer_info"]["punkt_source"]
    for name in ("cnndm", "samsum"):
        recs = load_split("domainsum", name, "test", data_dir=fixture_data_dir)
        docs, sums = [r["document"] for r in recs], [r["summary"] for r in recs]
        lib = domain_measures(docs, sums, profile="newsroom", tokenizer="nltk")
        for key in ("coverage", "density", "compression", "doc_length"):
            assert payload["domains"][name][key] == lib[key], (name, key)
    # samsum's dialogue quotes and clitics tokenize differently under spaCy
    spacy_lib = domain_measures(docs, sums, profile="newsroom")
    assert spacy_lib["doc_length"] != payload["domains"]["samsum"]["doc_length"]


def test_workers_give_identical_results(fixture_data_dir, tmp_path):
    args = ["--subsets", "cnndm,pubmed,samsum", "--splits", "train,test",
            "--data-dir", str(fixture_data_dir), "--quiet", "--no-plots", "--max-docs", "6"]
    assert ds.main([*args, "--out", str(tmp_path / "one"), "--workers", "1"]) == 0
    assert ds.main([*args, "--out", str(tmp_path / "two"), "--workers", "2",
                    "--chunk-size", "2"]) == 0
    one = json.loads((tmp_path / "one" / "domain_stats.json").read_text())
    two = json.loads((tmp_path / "two" / "domain_stats.json").read_text())
    assert one["vocab_overlap"] == two["vocab_overlap"]
    for name in ("cnndm", "pubmed", "samsum"):
        a, b = one["domains"][name], two["domains"][name]
        assert a["n_pairs"] == 6  # --max-docs
        for key in MEASURES:
            assert a[key] == b[key]
    assert not list((tmp_path / "one").glob("*.png"))  # --no-plots


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")


def test_bad_input_reported(tmp_path):
    good = {"document": "The council approved the new budget on Monday after a long debate.",
            "summary": "The council approved the budget."}
    records = [
        good,
        dict(good),                                             # duplicate
        {"document": "", "summary": "Nothing to summarise."},   # empty document
        {"document": "A short text.", "summary": ""},           # empty summary
        {"document": "Tiny.", "summary": "A summary far longer than its document."},
        {"document": "Der Stadtrat in Köln hat den Haushalt beschlossen — 東京 auch.",
         "summary": "Köln beschließt Haushalt."},               # non-ASCII
    ]
    write_jsonl(tmp_path / "data" / "domainsum" / "cnndm" / "test.jsonl", records)
    out = tmp_path / "out"
    rc = ds.main(["--subsets", "cnndm", "--data-dir", str(tmp_path / "data"), "--out", str(out),
                  "--workers", "1", "--quiet", "--drop-duplicates"])
    assert rc == 0
    r = json.loads((out / "domain_stats.json").read_text())["domains"]["cnndm"]
    assert r["n_pairs"] == 6 and r["n_used"] == 3
    assert r["skipped_empty_document"] == 1 and r["skipped_empty_summary"] == 1
    assert r["skipped_duplicate"] == 1 and r["n_duplicate"] == 1
    assert r["n_doc_shorter_than_summary"] == 1 and r["n_non_ascii"] == 1
    assert all(math.isfinite(r[m]) for m in MEASURES)
    md = (out / "domain_stats.md").read_text()
    assert "skipped 1 empty document, 1 empty summary, 1 duplicate" in md
    assert "1 with non-ASCII text" in md
    assert not list(out.glob("*.png"))  # one domain: nothing to compare


def test_all_pairs_empty_gives_na(tmp_path):
    write_jsonl(tmp_path / "data" / "domainsum" / "pubmed" / "test.jsonl",
                [{"document": "", "summary": "x"}, {"document": " ", "summary": ""}])
    out = tmp_path / "out"
    assert ds.main(["--subsets", "pubmed", "--data-dir", str(tmp_path / "data"),
                    "--out", str(out), "--workers", "1", "--quiet"]) == 0
    r = json.loads((out / "domain_stats.json").read_text())["domains"]["pubmed"]
    assert r["n_used"] == 0 and r["doc_length"] is None  # nan -> null in JSON
    md = (out / "domain_stats.md").read_text()
    assert "| genre | pubmed | 0 | n/a ± n/a |" in md
    assert not list(out.glob("*.png"))  # nothing to draw
    assert "radar_domainsum.png not drawn: a radar chart compares at least 2 series; got 0" in md


def test_missing_data_is_a_clean_error(tmp_path, capsys):
    rc = ds.main(["--subsets", "cnndm", "--data-dir", str(tmp_path), "--out",
                  str(tmp_path / "out"), "--quiet"])
    assert rc == 2
    assert "missing split 'test'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ds.main(["--subsets", "nosuchdomain", "--data-dir", str(tmp_path), "--quiet"])


def test_synthetic_timing(tmp_path, capsys):
    assert ds.main(["--synthetic", "300", "--synthetic-pool", "100", "--workers", "1",
                    "--quiet", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "synthetic: 300 news-length pairs measured" in printed
    payload = json.loads((tmp_path / "domain_stats.json").read_text())
    r = payload["domains"]["synthetic_news"]
    assert r["n_pairs"] == 300 and r["n_duplicate"] == 200 and r["seconds"] > 0
    assert 700 < r["doc_length"] < 800 and r["summary_length"] == 56


def test_vocabulary_and_overlap_helpers():
    from collections import Counter

    stop, source = domains.stopwords()
    assert {"the", "and", "n't", "'s"} <= stop and source
    assert len(domains.BUNDLED_STOPWORDS) == 179
    # the same 179 words as the suite's bundled NLTK list (without its 2025 additions)
    from custom_metrics.stopwords import ENGLISH_STOPWORDS, NLTK_2025_ADDITIONS

    assert set(domains.BUNDLED_STOPWORDS) == ENGLISH_STOPWORDS - NLTK_2025_ADDITIONS
    counts = Counter({"the": 50, "court": 9, ",": 40, "judge": 9, "ruled": 3, "n't": 7})
    # stopwords, clitics and punctuation out; ties by token
    assert domains.domain_vocabulary(counts, 2, stop) == ["court", "judge"]
    # |{b, c}| / min(3, 2) = 100 ; |{c}| / min(3, 4) = 33.3
    m = domains.overlap_matrix([["a", "b", "c"], ["b", "c"], ["c", "x", "y", "z"]])
    assert m[0][1] == pytest.approx(100.0) and m[0][2] == pytest.approx(100 / 3)
    assert math.isnan(domains.overlap_matrix([[], ["a"]])[0][1])


def test_levels_are_the_catalogues():
    from lm_eval_tasks.catalog import DOMAINSUM_LEVELS

    assert stats.LEVELS is DOMAINSUM_LEVELS


def test_subsets_stay_one_group(fixture_data_dir, tmp_path, capsys):
    """--subsets cnndm,cnn (a genre and a style domain) is one comparison, not two levels."""
    out = tmp_path / "out"
    assert ds.main(["--subsets", "cnndm,cnn", "--data_dir", str(fixture_data_dir),
                    "--out", str(out), "--workers", "1", "--quiet"]) == 0
    payload = json.loads((out / "domain_stats.json").read_text())
    assert payload["group_by"] == "none"
    assert payload["groups"] == {"domainsum": ["cnndm", "cnn"]}
    assert [payload["domains"][d]["level"] for d in ("cnndm", "cnn")] == ["genre", "style"]
    ov = payload["vocab_overlap"]["domainsum"]
    assert ov["domains"] == ["cnndm", "cnn"] and len(ov["matrix"]) == 2
    assert ov["matrix"][0][0] == 100.0 and 0 < ov["matrix"][0][1] < 100
    assert ov["matrix"][0][1] == ov["matrix"][1][0]
    # the overlap is the library's: top words of each domain, |A & B| / min(|A|, |B|)
    stop, _ = domains.stopwords()
    vocabs = []
    for d in ("cnndm", "cnn"):
        recs = load_split("domainsum", d, "test", data_dir=fixture_data_dir)
        _, counts = domains.analyse_pairs([r["document"] for r in recs], [r["summary"] for r in recs],
                                     progress=False)
        vocabs.append(domains.domain_vocabulary(counts, 10_000, stop))
    assert ov["matrix"] == domains.overlap_matrix(vocabs)
    assert_png(out / "radar_domainsum.png")
    assert_png(out / "vocab_overlap_domainsum.png")
    assert sorted(p.name for p in out.glob("*.png")) == ["radar_domainsum.png", "vocab_overlap_domainsum.png"]
    md = (out / "domain_stats.md").read_text()
    assert "| genre | cnndm |" in md and "| style | cnn |" in md
    assert "Vocabulary overlap (%), domainsum:" in md and "not drawn" not in md
    assert "not drawn" not in capsys.readouterr().err


def test_group_by_level_splits_and_says_why_no_figure(fixture_data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert ds.main(["--subset", "cnndm,cnn,fox", "--group_by", "level", "--data-dir",
                    str(fixture_data_dir), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    payload = json.loads((out / "domain_stats.json").read_text())
    assert payload["groups"] == {"genre": ["cnndm"], "style": ["cnn", "fox"]}
    assert list(payload["vocab_overlap"]) == ["style"]  # genre has a single domain
    assert sorted(p.name for p in out.glob("*.png")) == ["radar_style.png", "vocab_overlap_style.png"]
    reasons = [
        "vocabulary overlap of genre not computed: it compares at least 2 domains; the group has 1 (cnndm)",
        "radar_genre.png not drawn: a radar chart compares at least 2 series; got 1 (cnndm) "
        "(--group-by none keeps the selected domains in one group)",
    ]
    assert payload["notes"] == reasons
    md = (out / "domain_stats.md").read_text()
    err = capsys.readouterr().err
    for reason in reasons:
        assert f"- {reason}" in md
        assert f"note: {reason}" in err


def test_one_domain_draws_nothing_and_says_why(fixture_data_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert ds.main(["--subsets", "samsum", "--data-dir", str(fixture_data_dir), "--out", str(out),
                    "--workers", "1", "--no-progress"]) == 0
    assert not list(out.glob("*.png")) and not list(out.glob("vocab_overlap_*"))
    err = capsys.readouterr().err
    assert ("note: radar_domainsum.png not drawn: a radar chart compares at least 2 series; "
            "got 1 (samsum) (select 2 or more domains to compare)") in err
    assert "samsum: 3/3 pairs in" in err  # --no-progress keeps the timing line
    assert "domains:" not in err and "measures:" not in err  # but no bars


def test_progress_bars_and_quiet(fixture_data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DOMSUM_PROGRESS", "1")
    args = ["--subsets", "reddit,wikihow", "--data-dir", str(fixture_data_dir), "--workers", "1",
            "--no-plots"]
    assert ds.main([*args, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "domains: 100%" in err and "2/2" in err  # the bar over domains, finished
    assert "reddit: 3/3 pairs in" in err
    assert ds.main([*args, "--out", str(tmp_path / "b"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "domains:" not in err and "pairs in" not in err
    monkeypatch.setenv("DOMSUM_PROGRESS", "0")  # the environment switch turns bars off too
    assert ds.main([*args, "--out", str(tmp_path / "c")]) == 0
    err = capsys.readouterr().err
    assert "domains:" not in err and "reddit: 3/3 pairs in" in err


def test_group_by_defaults():
    assert ds.parse_args(["--subsets", "cnndm,cnn"]).group_by == "none"
    assert ds.parse_args(["--level", "all"]).group_by == "level"
    assert ds.parse_args([]).group_by == "level"
    args = ds.parse_args(["--level", "genre", "--group-by", "none"])
    assert stats.select(args.benchmark, args.level, args.subsets, args.group_by) == [("domainsum", d) for d in stats.LEVELS["genre"]]
    args = ds.parse_args(["--benchmark", "adapteval"])
    assert stats.select(args.benchmark, args.level, args.subsets, args.group_by) == [("adapteval", d) for d in ("arxiv", "pubmed", "govreport")]


def test_published_table5_beside_each_domain(genre_run, fixture_data_dir):
    """Every DomainSum domain measured gets the paper's Table 5 value of each measure beside
    its own (on the paper's scale), cited, with the differences in protocol named: the pairs
    measured against the count the paper does not state, the split and the tokenizer."""
    from lm_eval_tasks import published

    data = json.loads(published.data_file("domainsum").read_text(encoding="utf-8"))
    table5 = {(v["subset"], v["measure"]): v for v in data["values"] if v["table"] == "Table 5"}
    payload = json.loads((genre_run / "domain_stats.json").read_text())
    records = payload["published"]
    assert {(r["label"].split()[0]) for r in records} == set(stats.LEVELS["genre"])
    assert len(records) == len(stats.LEVELS["genre"]) * len(MEASURES)
    md = (genre_run / "domain_stats.md").read_text()
    for r in records:
        domain = r["label"].split()[0]
        value = next(v for (s, _), v in table5.items() if s == domain and v["column"] == r["column"])
        assert r["published"] == value["value"] and r["cite"] == f"DomainSum Table 5, row {value['row']}, " \
                                                              f"column {value['column']}"
        scale = data["metrics"][value["metric"]]["scale"]
        assert r["run_value"] == payload["domains"][domain][value["measure"]] * scale
        n = len(load_split("domainsum", domain, "test", data_dir=fixture_data_dir))
        diffs = {d["field"]: d for d in r["differences"]}
        assert diffs["test documents"]["run"] == n and "unknown" in diffs["test documents"]["paper"]
        assert diffs["document split"]["run"] == "test"
        assert diffs[f"{value['metric']} tokenizer"]["run"] == "nltk"
        assert r["comparable"] is False and "measure definitions" in r["checked"]
        assert "measure definitions" not in diffs  # the domainsum profile is the paper's
        assert f"| {domain} {r['column']} | " in md and f"{value['value']:.2f} (published)" in md
        assert f"✗ not comparable: {n} test documents (paper: not stated" in md


def test_newsroom_profile_is_a_named_difference(fixture_data_dir, tmp_path):
    out = tmp_path / "nr"
    assert ds.main(["--subsets", "cnndm", "--profile", "newsroom", "--tokenizer", "nltk", "--data-dir",
                    str(fixture_data_dir), "--out", str(out), "--workers", "1", "--quiet", "--no-plots"]) == 0
    records = json.loads((out / "domain_stats.json").read_text())["published"]
    assert records and all({"field": "measure definitions", "run": "newsroom profile",
                            "paper": "the DomainSum release's (profile domainsum)"} in r["differences"]
                           for r in records)
