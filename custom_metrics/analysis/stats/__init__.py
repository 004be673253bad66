"""The suite's statistics, in one package: every correlation, interval, paired test and
agreement coefficient any command reports is computed here.

Why one place: ``domsum report``, ``rescore``, ``correlate`` and ``meta-eval`` (and the
CCSBench length PCC) print numbers that must agree wherever the same data appear —
the same resampling rule, the same pair-dropping rule, the same p-value convention.

* :mod:`.bootstrap` — seeded percentile bootstrap over documents (resampling rule,
  intervals of means, NaN-means and corpus statistics);
* :mod:`.significance` — paired permutation and paired bootstrap tests between two
  systems on shared documents;
* :mod:`.correlation` — Pearson / Spearman / Kendall coefficients and p-values;
* :mod:`.coefficients` — batched, weighted Pearson, Spearman, Kendall tau-b and tau-c
  (a bootstrap resample as multiplicities: a thousand resamples in one array operation);
* :mod:`.levels` — metric-human correlation at the summary, system and global levels
  (meta-evaluation tables), with tie-safe system means;
* :mod:`.resampling` — bootstrap intervals resampling systems, documents or both, the
  paired permutation test and Williams' test between two metrics (Deutsch et al. 2021);
* :mod:`.agreement` — Cohen's kappa, unweighted and weighted; Krippendorff's alpha;
* :mod:`.consensus` — one score per item from several annotators (mean, median, majority).

Import from the submodules: this package imports none of them, so the light ones
(:mod:`.correlation` on the scoring path) never pull in pandas or scipy.
"""
