"""AdaptEval's LLM-judge metrics: Domain Adaptation, Coherence, Fluency.

Sources of the prompt text (kept verbatim where a source exists, so scores are
comparable with the papers):

* **Domain Adaptation (1–5)** — criteria and evaluation steps of AdaptEval
  (Afzal et al., 2024, arXiv 2407.11591, Table 8), as released in the authors'
  repository (``anum94/AdaptEval``, ``gpt4-eval.py``). Obvious typos of the
  release ("doamin", "would authored", "summaries the ... concept") are corrected;
  the meaning is unchanged.
* **Coherence (1–5)** — G-Eval (Liu et al., 2023, ``nlpyang/geval``,
  ``prompts/summeval/coh_detailed.txt``): criteria (the DUC structure-and-coherence
  question) and steps, with "news article" generalised to "article" as AdaptEval
  did.
* **Fluency (1–3)** — G-Eval (``flu_detailed.txt``): criteria with the three level
  descriptions; G-Eval gives no steps for fluency, so the one-line step of the
  AdaptEval release is used. As in G-Eval, the fluency judge sees only the summary.

Frame: G-Eval's layout ("You will be given one summary written for ...", Evaluation
Criteria, Evaluation Steps, the source text and summary, then "Evaluation Form
(scores ONLY): - Metric (lo-hi):"). It asks for the score only, so the first
generated token is the score — what log-probability scoring reads. Instructions go
in the system message, the material to judge in the user message. The only
domain-specific part is the opening sentence, which names the kind of document
(e.g. "a biomedical research article (PubMed)"), as G-Eval named "a news article".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from custom_metrics.judge import (
    JudgeConfig,
    JudgeStats,
    Messages,
    Scale,
    judge_scores,
    notice_judge_skipped,
)


@dataclass(frozen=True)
class JudgeMetric:
    """One judge dimension: its name in results, the label the judge sees, its scale,
    the criteria and steps, whether the judge sees the source document, and the source
    of the text."""

    name: str
    label: str
    scale: Scale
    criteria: str
    steps: str
    uses_document: bool
    source: str


DOMAIN_ADAPTATION = JudgeMetric(
    name="domain_adaptation",
    label="Domain Adaptation",
    scale=(1, 5),
    criteria=(
        "Domain Adaptation (1-5) - the degree to which the summary adheres to the domain specific "
        "language. A good summary employs domain-specific terminology and conveys the sense that "
        "the model comprehends and encapsulates domain-specific knowledge. It resembles the content "
        "that would be authored by a domain expert. Annotators were also asked to penalize summaries "
        "that didn't adhere to domain-specific knowledge, and rather used simple words."
    ),
    steps=(
        "1. Read the article carefully and understand the domain it belongs to.\n"
        "2. Read the summary and check if it contains domain-specific terminologies and concepts, "
        "and if it is able to concisely summarize the domain specific concepts in the article.\n"
        "3. Assign a score for domain adaptation based on the Evaluation Criteria."
    ),
    uses_document=True,
    source="AdaptEval (Afzal et al., 2024), Table 8 / release gpt4-eval.py",
)

COHERENCE = JudgeMetric(
    name="coherence",
    label="Coherence",
    scale=(1, 5),
    criteria=(
        "Coherence (1-5) - the collective quality of all sentences. We align this dimension with "
        "the DUC quality question of structure and coherence whereby \"the summary should be "
        "well-structured and well-organized. The summary should not just be a heap of related "
        "information, but should build from sentence to a coherent body of information about a "
        "topic.\""
    ),
    steps=(
        "1. Read the article carefully and identify the main topic and key points.\n"
        "2. Read the summary and compare it to the article. Check if the summary covers the main "
        "topic and key points of the article, and if it presents them in a clear and logical order.\n"
        "3. Assign a score for coherence on a scale of 1 to 5, where 1 is the lowest and 5 is the "
        "highest based on the Evaluation Criteria."
    ),
    uses_document=True,
    source="G-Eval (Liu et al., 2023), prompts/summeval/coh_detailed.txt",
)

FLUENCY = JudgeMetric(
    name="fluency",
    label="Fluency",
    scale=(1, 3),
    criteria=(
        "Fluency (1-3): the quality of the summary in terms of grammar, spelling, punctuation, word "
        "choice, and sentence structure.\n\n"
        "- 1: Poor. The summary has many errors that make it hard to understand or sound unnatural.\n"
        "- 2: Fair. The summary has some errors that affect the clarity or smoothness of the text, "
        "but the main points are still comprehensible.\n"
        "- 3: Good. The summary has few or no errors and is easy to read and follow."
    ),
    steps="Read the summary and evaluate its fluency based on the given criteria. "
          "Assign a fluency score from 1 to 3.",
    uses_document=False,
    source="G-Eval (Liu et al., 2023), prompts/summeval/flu_detailed.txt; step from the AdaptEval release",
)

ADAPTEVAL_METRICS: dict[str, JudgeMetric] = {m.name: m for m in (DOMAIN_ADAPTATION, COHERENCE, FLUENCY)}
DEFAULT_METRICS = tuple(ADAPTEVAL_METRICS)

# How the opening sentence names each AdaptEval domain's documents.
DOMAIN_DOCUMENTS = {
    "arxiv": "a scientific article (arXiv)",
    "pubmed": "a biomedical research article (PubMed)",
    "govreport": "a government report (GovReport)",
}


def document_description(domain: str) -> str:
    """The phrase naming the document kind, e.g. "a government report (GovReport)"."""
    key = domain.strip().lower()
    return DOMAIN_DOCUMENTS.get(key, f"an article from the {domain} domain")


def _truncate_words(text: str, max_words: int | None) -> str:
    if not max_words:
        return text
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]) + " ..."


def build_messages(metric: JudgeMetric, document: str, summary: str, domain: str,
                   max_document_words: int | None = None) -> Messages:
    """The chat messages asking the judge for one metric's score of one summary."""
    lo, hi = metric.scale
    system = (
        f"You will be given one summary written for {document_description(domain)}.\n\n"
        "Your task is to rate the summary on one metric.\n\n"
        "Please make sure you read and understand these instructions carefully. Please keep this "
        "document open while reviewing, and refer to it as needed.\n\n"
        f"Evaluation Criteria:\n\n{metric.criteria}\n\n"
        f"Evaluation Steps:\n\n{metric.steps}"
    )
    parts = []
    if metric.uses_document:
        parts.append(f"Source Text:\n\n{_truncate_words(document or '', max_document_words)}")
    parts.append(f"Summary:\n\n{summary or ''}")
    parts.append(f"Evaluation Form (scores ONLY):\n\n- {metric.label} ({lo}-{hi}):")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def _resolve_metrics(metrics: Sequence[str]) -> list[JudgeMetric]:
    unknown = [m for m in metrics if m not in ADAPTEVAL_METRICS]
    if unknown:
        raise ValueError(f"unknown judge metric(s) {unknown}; choose from {sorted(ADAPTEVAL_METRICS)}")
    return [ADAPTEVAL_METRICS[m] for m in metrics]


def adapteval_judge(
    documents: Sequence[str],
    summaries: Sequence[str],
    domain: str,
    config: JudgeConfig | None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    max_document_words: int | None = None,
    stats: JudgeStats | None = None,
) -> dict[str, Any] | None:
    """AdaptEval's judge scores of ``summaries`` (of ``documents`` in ``domain``).

    All metrics' requests go out as one batch (one concurrency budget, one cache).
    Returns ``None`` (after a once-per-process notice) when ``config`` is None.
    Otherwise a dict with, per metric name: the mean over scored items (None when
    none was scored); and ``per_item`` (scores, None = not scored),
    ``parse_failures``, ``empty_skipped``, ``failed`` (unscored items by reason),
    ``n_scored``, ``judge_mode`` (``logprobs``/``samples``/``mixed``/``none``) keyed
    by metric, ``usage`` (:class:`JudgeStats` as a dict: tokens, HTTP calls, cache
    hits, retries, failures by reason) and ``judge`` (the configuration, without the
    key). ``max_document_words`` truncates long sources inside the prompt (default:
    the whole document, as AdaptEval did).

    Empty summaries (empty or whitespace-only) are not sent to the judge: a paid
    rating of nothing measures nothing. Each metric's score for them is None (NaN per
    document in the harness), left out of the metric's mean, and counted in
    ``empty_skipped`` (and ``usage["empty_skipped"]``), not as a parse failure.
    """
    if config is None:
        notice_judge_skipped("AdaptEval judge metrics")
        return None
    if len(documents) != len(summaries):
        raise ValueError(f"adapteval_judge: {len(documents)} documents but {len(summaries)} summaries")
    chosen = _resolve_metrics(metrics)
    requests: list[Messages] = []
    scales: list[Scale] = []
    for metric in chosen:
        for doc, summ in zip(documents, summaries):
            requests.append(build_messages(metric, doc, summ, domain, max_document_words))
            scales.append(metric.scale)
    result = judge_scores(requests, scales, config, stats=stats, desc=f"judge {domain}",
                          generations=[summ for _ in chosen for summ in summaries])
    out: dict[str, Any] = {"per_item": {}, "reasons": {}, "parse_failures": {}, "empty_skipped": {},
                           "failed": {}, "n_scored": {}, "judge_mode": {}}
    n = len(documents)
    for k, metric in enumerate(chosen):
        scores = result.scores[k * n:(k + 1) * n]
        modes = result.modes[k * n:(k + 1) * n]
        reasons = result.reasons[k * n:(k + 1) * n]
        scored = [s for s in scores if s is not None]
        used = {m for m, s in zip(modes, scores) if s is not None and m}
        out[metric.name] = sum(scored) / len(scored) if scored else None
        out["per_item"][metric.name] = scores
        out["reasons"][metric.name] = reasons
        out["parse_failures"][metric.name] = sum(r == "parse" for r in reasons)
        out["empty_skipped"][metric.name] = sum(r == "empty" for r in reasons)
        out["failed"][metric.name] = {r: reasons.count(r) for r in sorted({r for r in reasons if r})}
        out["n_scored"][metric.name] = len(scored)
        out["judge_mode"][metric.name] = used.pop() if len(used) == 1 else ("mixed" if used else "none")
    out["usage"] = result.stats.as_dict()
    out["judge"] = result.config
    return out
