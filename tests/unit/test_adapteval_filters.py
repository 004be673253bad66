"""AdaptEval's filters leave out the extractive record (no model)."""




def test_filters_remove_the_extractive_record(fixture_data_dir):
    from lm_eval_tasks.benchmarks.adapteval.build import build_docs, filter_records
    from lm_eval_tasks.data.loader import load_split

    recs = load_split("adapteval", "arxiv", "train", fixture_data_dir)
    kept, removed = filter_records(recs, "arxiv", {}, "adapteval_arxiv")
    assert removed["extractive"] == 1 and len(kept) == len(recs) - 1
    kept, removed = filter_records(recs, "arxiv", {"filter_extractive_overlap": 1.1}, "adapteval_arxiv")  # > 1: off
    assert removed["extractive"] == 0
    docs, _ = build_docs("govreport", 0, "adapteval_govreport", {"data_dir": str(fixture_data_dir), "max_doc_words": 20})
    assert all(d["prompt"].endswith("\nSUMMARY:") for d in docs)
    assert all(len(d["prompt"].split("TEXT: ")[1].split()) <= 21 for d in docs)
