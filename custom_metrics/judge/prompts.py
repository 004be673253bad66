"""AdaptEval's LLM-judge metrics: Domain Adaptation, Coherence, Fluency.

Three prompt variants (setting ``judge_prompt_variant``; the results record the one used
as ``judge_prompt_variant_used``). Where the paper and its release disagree, the default
follows the paper and the release is the named variant ``release``.

* ``paper`` (default) — AdaptEval (Afzal et al., 2024, arXiv 2407.11591) Appendix B.
  Domain Adaptation: Table 8 word for word — its SYSTEM PROMPT (the G-Eval frame for "an
  article", criteria and steps inline) and USER PROMPT ("Example:", the source, the
  summary, an Evaluation Form asking for the score then a 30-word explanation, and the
  metric's name), with the criteria and steps Table 8 prints, its slips included ("that
  model comprehends", "would authored", "concisely summaries the domain specific
  concept"; the typeset apostrophe of "didn't" is the ASCII one of the LaTeX source).
  Coherence and Fluency: "we use the prompts introduced by Liu et al. (2023)", i.e.
  G-Eval's ``prompts/summeval/coh_detailed.txt`` and ``flu_detailed.txt`` word for word
  (layout, criteria, steps, "Evaluation Form (scores ONLY)"; Fluency without steps and
  without the source), with "news article" read as "article", as AdaptEval's own frame
  reads it.
* ``release`` — the strings of the authors' ``anum94/AdaptEval`` ``gpt4-eval.py``,
  whitespace included, for all three metrics: its frame (as Table 8, but the form asks
  for "the score as a numeric value" and ends with ``- {metric_name}``), its criteria and
  steps (its own wording of G-Eval's for Coherence and Fluency, every metric shown the
  source), its metric names (``Domain_Adaptation``, ``Coherence``, ``Fluency``) and its
  slips ("doamin specific language", "knowledge.It", "to acoherent body"). The release
  sends the user message before the system message; here the system message comes
  first (the order chat templates require), with the same texts.
* ``suite`` — the suite's earlier prompt: G-Eval's layout for all three metrics, the
  document kind named in the opening sentence (e.g. "a biomedical research article
  (PubMed)"), the release's Domain Adaptation text with its typos corrected, and the
  score-only form ``- Metric (lo-hi):``; kept so earlier results can be reproduced.

Paper versus release, Domain Adaptation (the only prompt Table 8 prints):
- form: paper "First the evaluation score for the defined metrics, followed by an
  explanation for the score. Please limit your response to 30 words." then
  ``{metric_name}``; release "First the score as a numeric value followed by an
  explanation for the score. Please limit your response to 30 words" (no full stop)
  then ``- {metric_name}``;
- criteria: paper "adheres to the domain-specific language", release "adheres to the
  doamin specific language"; paper "knowledge. It resembles", release "knowledge.It
  resembles";
- line breaks: the paper prints "Evaluation Criteria: {criteria}" on one line and no
  blank lines; the release puts blank lines around every part;
- the steps agree (the release has a trailing space after step 2).

Scoring reads the first number of the reply (or its log-probabilities), so a reply that
gives the score and then an explanation, as the paper's and the release's forms ask, is
scored like a score-only reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from custom_metrics.setting import Setting
from custom_metrics.judge import JudgeConfig, JudgeStats, Messages, Scale, ask, notice_judge_skipped


@dataclass(frozen=True)
class JudgeMetric:
    """One judge dimension: its name in results, the label the judge sees, its scale,
    the criteria and steps of the ``suite`` variant (for Coherence and Fluency also
    G-Eval's, which the ``paper`` variant uses), whether the judge sees the source
    document in that variant, and the source of the text."""

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
    source="AdaptEval release gpt4-eval.py, typos corrected (suite variant; paper: Table 8 verbatim)",
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

PROMPT_VARIANTS = ("paper", "release", "suite")
DEFAULT_PROMPT_VARIANT = "paper"
#: the setting choosing the variant (collected by :func:`custom_metrics.judge.setting_rows`)
SETTING_ROWS = (
    Setting("judge_prompt_variant", "DOMSUM_JUDGE_PROMPT_VARIANT", str, DEFAULT_PROMPT_VARIANT,
            "AdaptEval judge prompts: `paper` (Table 8; G-Eval for coherence and fluency), `release` "
            "(`gpt4-eval.py`) or `suite` (G-Eval layout for all three, score only).", "judge",
            choices=PROMPT_VARIANTS, after="judge_max_retries", system="judge"),
)


def check_prompt_variant(value: str | None) -> str:
    """``value`` checked against :data:`PROMPT_VARIANTS`; None or empty = the default (``paper``)."""
    variant = str(value or DEFAULT_PROMPT_VARIANT).strip().lower()
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"judge_prompt_variant must be one of {', '.join(PROMPT_VARIANTS)}, got {value!r}")
    return variant

# ------------------------------------------------------------------ paper (Appendix B)

#: AdaptEval Table 8, SYSTEM PROMPT
PAPER_SYSTEM = (
    "You will be given one summary written for an article. Your task is to rate the summary on one "
    "metric. Please make sure you read and understand these instructions very carefully. Please keep "
    "this document open while reviewing, and refer to it as needed.\n"
    "Evaluation Criteria: {criteria}\n"
    "Evaluation Steps: {steps}"
)
#: AdaptEval Table 8, USER PROMPT
PAPER_USER = (
    "Example:\n"
    "Source Text: {document}\n"
    "Summary: {summary}\n"
    "Evaluation Form: Please provide your response in two parts. First the evaluation score for the "
    "defined metrics, followed by an explanation for the score. Please limit your response to 30 words.\n"
    "{metric_name}"
)
#: AdaptEval Table 8, DOMAIN ADAPTATION SCORE CRITERIA
PAPER_DA_CRITERIA = (
    "Domain Adaptation(1-5) - the degree to which the summary adheres to the domain-specific language. "
    "A good summary employs domain-specific terminology and conveys the sense that model comprehends and "
    "encapsulates domain-specific knowledge. It resembles the content that would authored by a domain "
    "expert. Annotators were also asked to penalize summaries that didn't adhere to domain-specific "
    "knowledge, and rather used simple words."
)
#: AdaptEval Table 8, DOMAIN ADAPTATION SCORE STEPS
PAPER_DA_STEPS = (
    "1. Read the article carefully and understand the domain it belongs to.\n"
    "2. Read the summary and check if it contains domain-specific terminologies and concepts, and if it "
    "is able to concisely summaries the domain specific concept in the article.\n"
    "3. Assign a score for domain adaptation based on the Evaluation Criteria."
)
_GEVAL_HEAD = (
    "You will be given one summary written for an article.\n\n"
    "Your task is to rate the summary on one metric.\n\n"
    "Please make sure you read and understand these instructions carefully. Please keep this document "
    "open while reviewing, and refer to it as needed.\n\n"
)
#: G-Eval coh_detailed.txt ("news article" read as "article"), split before "Example:"
GEVAL_COHERENCE = (
    _GEVAL_HEAD
    + "Evaluation Criteria:\n\n" + COHERENCE.criteria + "\n\n"
    "Evaluation Steps:\n\n" + COHERENCE.steps,
    "Example:\n\n\nSource Text:\n\n{document}\n\nSummary:\n\n{summary}\n\n\n"
    "Evaluation Form (scores ONLY):\n\n- Coherence:",
)
#: G-Eval flu_detailed.txt ("news article" read as "article"), split before "Example:"
GEVAL_FLUENCY = (
    _GEVAL_HEAD + "\nEvaluation Criteria:\n\n" + FLUENCY.criteria,
    "Example:\n\nSummary:\n\n{summary}\n\n\nEvaluation Form (scores ONLY):\n\n- Fluency (1-3):",
)

# ------------------------------------------------------------------ release (gpt4-eval.py, verbatim)

RELEASE_SYSTEM = (
    "\nYou will be given one summary written for an article. Your task is to rate the summary on one metric.\n"
    "Please make sure you read and understand these instructions very carefully. \n"
    "Please keep this document open while reviewing, and refer to it as needed.\n\n"
    "Evaluation Criteria:\n\n{criteria}\n\nEvaluation Steps:\n\n{steps}\n"
)
RELEASE_USER = (
    "\n\nExample:\n\nSource Text:\n\n{document}\n\nSummary:\n\n{summary}\n\nEvaluation Form:\n\n"
    "Please provide your response in two parts. First the score as a numeric value followed by an "
    "explanation for the score. Please limit your response to 30 words\n\n\n- {metric_name}\n"
)
#: metric -> (metric_name, criteria, steps) exactly as gpt4-eval.py builds them
RELEASE_TEXTS: dict[str, tuple[str, str, str]] = {
    "domain_adaptation": (
        "Domain_Adaptation",
        "\nDomain Adaptation(1-5) - the degree to which the summary adheres to the doamin specific language. "
        "A good summary employs domain-specific terminology and conveys the sense that model comprehends and "
        "encapsulates domain-specific knowledge.It resembles the content that would authored by a domain "
        "expert. Annotators were also asked to penalize summaries that didn't adhere to domain-specific "
        "knowledge, and rather used simple words.\n",
        "\n1. Read the article carefully and understand the domain it belongs to.\n"
        "2. Read the summary and check if it contains domain-specific terminologies and concepts, and if it "
        "is able to concisely summaries the domain specific concept in the article. \n"
        "3. Assign a score for domain adaptation based on the Evaluation Criteria.\n",
    ),
    "coherence": (
        "Coherence",
        "\nCoherence(1-5) - the collective quality of all sentences. We align this dimension with the DUC "
        "quality question of structure and coherence whereby \"the summary should be well-structured and "
        "well-organized. The summary should not just be a heap of related information, but should build "
        "from sentence to acoherent body of information about a topic.\"\n",
        "\n1. Read the article carefully and identify the main topic and key points.\n"
        "2. Read the summary and compare it to the article. Check if the summary covers the main topic and "
        "key points of the article,\nand if it presents them in a clear and logical order.\n"
        "3. Assign a score for coherence on a scale of 1 to 5, where 1 is the lowest and 5 is the highest "
        "based on the Evaluation Criteria.\n",
    ),
    "fluency": (
        "Fluency",
        "\nFluency(1-3): the quality of the summary in terms of grammar, spelling, punctuation, word choice, "
        "and sentence structure.\n"
        "1: Poor. The summary has many errors that make it hard to understand or sound unnatural.\n"
        "2: Fair. The summary has some errors that affect the clarity or smoothness of the text, but the "
        "main points are still comprehensible.\n"
        "3: Good. The summary has few or no errors and is easy to read and follow.\n",
        "\nRead the summary and evaluate its fluency based on the given criteria. Assign a fluency score "
        "from 1 to 3.\n",
    ),
}

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


def _suite_messages(metric: JudgeMetric, document: str, summary: str, domain: str) -> Messages:
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
        parts.append(f"Source Text:\n\n{document}")
    parts.append(f"Summary:\n\n{summary}")
    parts.append(f"Evaluation Form (scores ONLY):\n\n- {metric.label} ({lo}-{hi}):")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def build_messages(metric: JudgeMetric, document: str, summary: str, domain: str,
                   max_document_words: int | None = None, variant: str = DEFAULT_PROMPT_VARIANT) -> Messages:
    """The chat messages (system, then user) asking the judge for one metric's score of one summary.

    ``variant``: one of :data:`PROMPT_VARIANTS` (see the module docstring for the
    source of each text). ``max_document_words`` truncates the source inside the prompt.
    ``domain`` names the document kind in the ``suite`` variant only.
    """
    variant = check_prompt_variant(variant)
    document = _truncate_words(document or "", max_document_words)
    summary = summary or ""
    if variant == "suite":
        return _suite_messages(metric, document, summary, domain)
    if variant == "release":
        name, criteria, steps = RELEASE_TEXTS[metric.name]
        system = RELEASE_SYSTEM.format(criteria=criteria, steps=steps)
        user = RELEASE_USER.format(document=document, summary=summary, metric_name=name)
    elif metric.name == "domain_adaptation":
        system = PAPER_SYSTEM.format(criteria=PAPER_DA_CRITERIA, steps=PAPER_DA_STEPS)
        user = PAPER_USER.format(document=document, summary=summary, metric_name=metric.label)
    else:
        system, template = {"coherence": GEVAL_COHERENCE, "fluency": GEVAL_FLUENCY}[metric.name]
        user = template.format(document=document, summary=summary)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


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
    prompt_variant: str = DEFAULT_PROMPT_VARIANT,
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
    key), and ``prompt_variant`` (the texts sent: :data:`PROMPT_VARIANTS`).
    ``max_document_words`` truncates long sources inside the prompt (default: the whole
    document, as AdaptEval did).

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
    prompt_variant = check_prompt_variant(prompt_variant)
    requests: list[Messages] = []
    scales: list[Scale] = []
    for metric in chosen:
        for doc, summ in zip(documents, summaries):
            requests.append(build_messages(metric, doc, summ, domain, max_document_words, prompt_variant))
            scales.append(metric.scale)
    result = ask(config, requests, scale=scales, stats=stats, desc=f"judge {domain}",
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
    out["prompt_variant"] = prompt_variant
    return out
