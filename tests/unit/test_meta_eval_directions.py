"""Which meta-eval columns rank lower-first comes from the metric records (a key whose
direction is lower), our ``--compute`` column names, and the release columns the converters
read (DialSummEval's ``ppl``), not from a list kept by hand."""

from __future__ import annotations

import pandas as pd

from custom_metrics import registry
from custom_metrics.analysis.meta_eval import compute, converters
from custom_metrics.analysis.meta_eval.tables import LOWER_IS_BETTER, lower_is_better_columns, rankings


def test_the_lower_first_columns_follow_every_keys_direction():
    lower = set(LOWER_IS_BETTER)
    assert lower == set(lower_is_better_columns())
    assert {"perplexity", "ppl", "our_perplexity"} <= lower  # the names the tables took before
    for fam in registry.all_families():
        for k in fam.keys:
            ranked_lower = k.name in lower and compute.OURS + k.name in lower
            assert ranked_lower == (k.higher_is_better is False), k.name
    assert set(converters.LOWER_IS_BETTER_COLUMNS) <= lower


def test_rankings_put_the_lowest_mean_first_for_a_lower_first_key_only():
    # two documents per system; rank 1 = best
    df = pd.DataFrame({"system": ["a", "a", "b", "b"],
                       "our_length_mad": [0.0, 1.0, 2.0, 2.0],  # a: 0.5, b: 2.0 -> a best
                       "ppl": [30.0, 50.0, 10.0, 20.0],         # a: 40, b: 15 -> b best
                       "fkgl_normal": [8.0, 10.0, 12.0, 12.0],  # neither side better: ranked higher-first
                       "rougeL": [0.2, 0.4, 0.5, 0.5]})         # a: 0.3, b: 0.5 -> b best
    ranks = rankings(df, ["our_length_mad", "ppl", "fkgl_normal", "rougeL"])
    assert ranks.loc["a", "our_length_mad_rank"] == 1 and ranks.loc["b", "our_length_mad_rank"] == 2
    assert ranks.loc["b", "ppl_rank"] == 1 and ranks.loc["a", "ppl_rank"] == 2
    assert ranks.loc["b", "fkgl_normal_rank"] == 1
    assert ranks.loc["b", "rougeL_rank"] == 1
    assert ranks.loc["a", "ppl"] == 40.0 and ranks.loc["b", "our_length_mad"] == 2.0
