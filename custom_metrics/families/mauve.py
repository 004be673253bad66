"""MAUVE between generated and reference summaries.

Method (Pillutla et al., 2021, "MAUVE: Measuring the Gap Between Neural Text and
Human Text using Divergence Frontiers"; reference implementation the ``mauve-text``
package, whose defaults we follow; our own code, numpy + scikit-learn). Steps 3-4
agree with ``mauve-text`` 0.4's ``get_divergence_curve_for_multinomials`` and
``compute_area_under_curve`` to 1e-8 on random histograms (checked outside the test
suite, which does not install that package):

1. Features: the last-layer hidden state of the final token of each text under a
   causal LM (default ``gpt2-large``, configurable), text cut to 1,024 tokens, no
   special tokens. Empty texts are left out.
2. Quantisation: the features of both sets are L2-normalised, projected by PCA onto
   the fewest components explaining 90% of the variance, and clustered jointly by
   k-means into k = max(2, round(min(|P|, |Q|) / 10)) clusters (5 restarts, 500
   iterations, seed 25). P and Q become histograms over the k clusters.
3. Divergence curve: for mixtures R_w = w P + (1 - w) Q at 25 weights w evenly
   spaced in [1e-6, 1 - 1e-6], the points (exp(-c KL(Q || R_w)), exp(-c KL(P || R_w)))
   with scaling constant c = 5, plus the end points (1, 0) and (0, 1).
4. MAUVE = area under that curve (trapezoids; points sorted by x, and at equal x
   by decreasing y, so the curve is traced as the monotone frontier it is). In (0, 1]; 1
   when the histograms are identical. Higher is better.

k-means: scikit-learn's ``KMeans`` (k-means++, ``n_init`` restarts) when installed,
else a seeded numpy k-means++ / Lloyd implementation (the results record which);
the reference package uses faiss, so values agree with it only up to clustering
differences. Few texts make MAUVE noisy: the paper uses thousands; with under ~50
per side treat it as a smoke check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from custom_metrics.registry import NAN, Batch, Context, Family, Key, paired_texts, text_pairs
from custom_metrics.setting import Setting, as_int

DEFAULT_MODEL = "gpt2-large"
SCALING = 5.0
CURVE_POINTS = 25
SEED = 25
MAX_TOKENS = 1024

if TYPE_CHECKING:  # numpy is imported by the functions that compute: the registry's scan loads none
    import numpy as np


def featurize(texts: Sequence[str], model: str | None = None, batch_size: int = 8,
              max_tokens: int = MAX_TOKENS, *, key: str | None = "mauve_model",
              env: str | None = "DOMSUM_MAUVE_MODEL") -> np.ndarray:
    """[n, d] last-layer hidden state of each non-empty text's final token."""
    import numpy as np
    import torch

    from custom_metrics.hf_models import load_model, model_device

    tok, lm = load_model("causal", model or DEFAULT_MODEL, metric="mauve", key=key, env=env)
    device = model_device(lm)
    seqs = [tok(t.strip(), add_special_tokens=False)["input_ids"][:max_tokens] for t in texts if t and t.strip()]
    seqs = [s for s in seqs if s]
    feats: list[np.ndarray | None] = [None] * len(seqs)
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            batch = order[b : b + batch_size]
            width = max(len(seqs[i]) for i in batch)
            x = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for k, i in enumerate(batch):
                x[k, : len(seqs[i])] = torch.tensor(seqs[i])
                mask[k, : len(seqs[i])] = 1
            out = lm(input_ids=x.to(device), attention_mask=mask.to(device), output_hidden_states=True)
            last = out.hidden_states[-1].float().cpu().numpy()
            for k, i in enumerate(batch):
                feats[i] = last[k, len(seqs[i]) - 1]
    if not seqs:
        return np.zeros((0, 0))
    return np.stack(feats)  # type: ignore[arg-type]


def _kmeans_numpy(x: np.ndarray, k: int, seed: int, n_init: int = 5, max_iter: int = 500) -> np.ndarray:
    """Seeded k-means++ initialisation + Lloyd iterations; best inertia of ``n_init`` runs."""
    import numpy as np

    rng = np.random.default_rng(seed)
    best, best_inertia = None, math.inf
    for _ in range(n_init):
        centers = [x[rng.integers(len(x))]]
        for _ in range(1, k):
            d2 = np.min(((x[:, None, :] - np.asarray(centers)[None]) ** 2).sum(-1), axis=1)
            total = d2.sum()
            idx = rng.integers(len(x)) if total <= 0 else rng.choice(len(x), p=d2 / total)
            centers.append(x[idx])
        c = np.asarray(centers, dtype=np.float64)
        labels = np.zeros(len(x), dtype=int)
        for it in range(max_iter):
            d = ((x[:, None, :] - c[None]) ** 2).sum(-1)
            new = d.argmin(1)
            if it > 0 and np.array_equal(new, labels):
                break
            labels = new
            for j in range(k):
                if np.any(labels == j):
                    c[j] = x[labels == j].mean(0)
        inertia = float(((x - c[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = labels.copy(), inertia
    return best  # type: ignore[return-value]


def kmeans_impl() -> str:
    try:
        import sklearn.cluster  # noqa: F401

        return "sklearn"
    except ImportError:
        return "numpy"


def quantize(p_feats: np.ndarray, q_feats: np.ndarray, num_clusters: int | None = None,
             seed: int = SEED, explained_var: float = 0.9, impl: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (probabilities over clusters) of P and Q after joint PCA + k-means."""
    import numpy as np

    data = np.vstack([p_feats, q_feats]).astype(np.float64)
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    data = data / np.where(norms == 0, 1.0, norms)
    centered = data - data.mean(0)
    _, s, vt = np.linalg.svd(centered, full_matrices=False)
    var = s**2
    if var.sum() > 0:
        ratio = np.cumsum(var) / var.sum()
        dims = int(np.searchsorted(ratio, explained_var) + 1)
    else:
        dims = 1
    reduced = centered @ vt[: max(1, dims)].T
    k = num_clusters or max(2, int(round(min(len(p_feats), len(q_feats)) / 10)))
    k = min(k, len(data))
    impl = impl or kmeans_impl()
    if impl == "sklearn":
        from sklearn.cluster import KMeans

        labels = KMeans(n_clusters=k, n_init=5, max_iter=500, random_state=seed).fit(reduced).labels_
    else:
        labels = _kmeans_numpy(reduced, k, seed)
    n = len(p_feats)
    p_hist = np.bincount(labels[:n], minlength=k).astype(np.float64)
    q_hist = np.bincount(labels[n:], minlength=k).astype(np.float64)
    return p_hist / p_hist.sum(), q_hist / q_hist.sum()


def _kl(a: np.ndarray, b: np.ndarray) -> float:
    import numpy as np

    nz = a > 0
    return float(np.sum(a[nz] * np.log(a[nz] / b[nz])))


def divergence_curve(p: np.ndarray, q: np.ndarray, scaling: float = SCALING,
                     points: int = CURVE_POINTS) -> np.ndarray:
    """[m, 2] points (exp(-c KL(Q||R)), exp(-c KL(P||R))), end points included."""
    import numpy as np

    pts = [(1.0, 0.0)]
    for w in np.linspace(1e-6, 1 - 1e-6, points):
        r = w * p + (1 - w) * q
        pts.append((math.exp(-scaling * _kl(q, r)), math.exp(-scaling * _kl(p, r))))
    pts.append((0.0, 1.0))
    return np.asarray(pts)


def mauve_from_histograms(p: np.ndarray, q: np.ndarray, scaling: float = SCALING,
                          points: int = CURVE_POINTS) -> float:
    """Area under the divergence curve of two histograms."""
    import numpy as np

    curve = divergence_curve(np.asarray(p, float), np.asarray(q, float), scaling, points)
    order = np.lexsort((-curve[:, 1], curve[:, 0]))  # x ascending; at equal x, upper point first
    x, y = curve[order, 0], curve[order, 1]
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2))


def mauve_from_features(p_feats: np.ndarray, q_feats: np.ndarray, num_clusters: int | None = None,
                        seed: int = SEED, impl: str | None = None) -> float:
    p, q = quantize(p_feats, q_feats, num_clusters, seed, impl=impl)
    return mauve_from_histograms(p, q)


def mauve_scores(predictions: Sequence[str], references: Sequence[str], model: str | None = None,
          batch_size: int = 8, num_clusters: int | None = None, seed: int = SEED) -> dict:
    """``{"mauve": value, "mauve_kmeans": "sklearn"|"numpy", "mauve_texts": [n_pred, n_ref]}``.

    References play P (human text), predictions Q (model text).
    """
    q_feats = featurize(predictions, model, batch_size)
    p_feats = featurize(references, model, batch_size)
    impl = kmeans_impl()
    if len(q_feats) < 2 or len(p_feats) < 2:
        value = float("nan")  # MAUVE needs at least two texts per side
    else:
        value = mauve_from_features(p_feats, q_feats, num_clusters, seed, impl)
    return {"mauve": value, "mauve_kmeans": impl, "mauve_texts": [len(q_feats), len(p_feats)]}


# =========================================================================== the family record


def _mauve_score(batch: Batch, ctx: Context) -> dict[str, list]:
    # MAUVE is computed from the items by the corpus function; loading the model here makes a
    # missing model a skip (with featurize's own notice) before any item is handed out, and
    # the cached model is the one the corpus function then uses.
    from custom_metrics.hf_models import load_model

    tok, _ = load_model("causal", MAUVE_FAMILY.model(ctx), metric="mauve", key="mauve_model",
                        env="DOMSUM_MAUVE_MODEL")
    items = text_pairs(batch)

    def featurized(texts: list[str]) -> int:  # the texts featurize keeps: non-empty after tokenizing
        return sum(1 for t in texts if t.strip()
                   and tok(t.strip(), add_special_tokens=False)["input_ids"][:MAX_TOKENS])

    ctx.details["mauve_kmeans"] = kmeans_impl()
    ctx.details["mauve_texts"] = [featurized([p for p, _ in items]), featurized([r for _, r in items])]
    return {"mauve": items}


def _corpus_mauve(items: Sequence, ctx: Context) -> float:
    texts = paired_texts(items)
    if texts is None:
        return NAN
    return float(mauve_scores(*texts, MAUVE_FAMILY.model(ctx), int(ctx.settings.get("metric_batch_size") or 16))
                 ["mauve"])


MAUVE_FAMILY = Family(
    name="mauve",
    keys=(Key("mauve", aggregation="corpus", corpus=_corpus_mauve, display="MAUVE",
              description="MAUVE of the generated vs the reference summaries (two distributions)",
              no_interval="MAUVE refits its feature clustering per resample: too slow for a default run"),),
    score=_mauve_score,
    description="MAUVE (Pillutla et al.), generated vs reference summaries; fraction in [0, 1].",
    source="custom_metrics.families.mauve",
    needs=("model",), settings=("mauve_model", "metric_batch_size"), model_setting="mauve_model",
    default_model=lambda: DEFAULT_MODEL, optional=True,
)

SETTING_ROWS = (
    Setting("mauve_model", "DOMSUM_MAUVE_MODEL", str, DEFAULT_MODEL, "medqsum: MAUVE featurizer.", "scorers",
            after="ppl_model"),
    # the batch of every model-based battery family (BLANC, perplexity, MAUVE, scientific BERTScore)
    Setting("metric_batch_size", "DOMSUM_METRIC_BATCH_SIZE", as_int, 16, "medqsum: model batch size.", "scorers",
            low=1, after="mauve_model"),
)
METRIC_FAMILIES = (MAUVE_FAMILY,)
