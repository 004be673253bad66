"""Metric library of the domain-summarization suite.

Plain functions over strings and lists, no harness import, batched. Heavy scorers
(BERTScore encoder, judge client, language models) are loaded lazily and kept per
process. See docs/metrics.md ("Python API") for the public functions.

The names below are imported on first use (PEP 562), so ``import custom_metrics`` or
``from custom_metrics import rouge_scores`` loads only what it names: a ROUGE-only
caller imports no judge client, no FM and no statistics. ``bertscore`` and ``dvo`` are
functions named like their family modules; those modules live in
:mod:`custom_metrics.families`, so importing them binds nothing here that could shadow
the functions.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module that defines it
_PUBLIC: dict[str, str] = {
    "medqsum_battery": "custom_metrics.battery",
    "bertscore": "custom_metrics.families.bertscore",
    "blanc_help_per_document": "custom_metrics.families.blanc",
    "blanc_scores": "custom_metrics.families.blanc",
    "blanc_tune_per_document": "custom_metrics.families.blanc",
    "bleu_scores": "custom_metrics.families.bleu",
    "chrf_scores": "custom_metrics.families.bleu",
    "corpus_sacrebleu": "custom_metrics.families.bleu",
    "sentence_bleu_scores": "custom_metrics.families.bleu",
    "sentence_chrf_scores": "custom_metrics.families.bleu",
    "fkgl": "custom_metrics.families.ccs",
    "focus_f1": "custom_metrics.families.ccs",
    "keyword_success_rate": "custom_metrics.families.ccs",
    "length_bin": "custom_metrics.families.ccs",
    "length_scores": "custom_metrics.families.ccs",
    "readability_scores": "custom_metrics.families.ccs",
    "VocabularyNotFoundError": "custom_metrics.families.dvo",
    "dvo": "custom_metrics.families.dvo",
    "build_vocabulary": "custom_metrics.families.dvo",
    "dvo_scores": "custom_metrics.families.dvo",
    "dvo_token": "custom_metrics.families.dvo",
    "dvo_token_scores": "custom_metrics.families.dvo",
    "load_vocabulary": "custom_metrics.families.dvo",
    "vocabulary_path": "custom_metrics.families.dvo",
    "FACETS": "custom_metrics.judge.fm",
    "extract_facets": "custom_metrics.judge.fm",
    "fm_aggregate": "custom_metrics.judge.fm",
    "fm_scores": "custom_metrics.judge.fm",
    "parse_facets": "custom_metrics.judge.fm",
    "domainsum_fragments": "custom_metrics.analysis.fragments",
    "longest_match_fragments": "custom_metrics.analysis.fragments",
    "newsroom_fragments": "custom_metrics.analysis.fragments",
    "JudgeConfig": "custom_metrics.judge",
    "JudgeConfigError": "custom_metrics.judge",
    "JudgeError": "custom_metrics.judge",
    "JudgeRequestError": "custom_metrics.judge",
    "JudgeResult": "custom_metrics.judge",
    "JudgeStats": "custom_metrics.judge",
    "ask": "custom_metrics.judge",
    "judge_scores": "custom_metrics.judge",
    "judge_scores_async": "custom_metrics.judge",
    "judge_texts": "custom_metrics.judge",
    "judge_texts_async": "custom_metrics.judge",
    "notice_judge_skipped": "custom_metrics.judge",
    "ADAPTEVAL_METRICS": "custom_metrics.judge.prompts",
    "adapteval_judge": "custom_metrics.judge.prompts",
    "ModelUnavailable": "custom_metrics.hf_models",
    "mauve_scores": "custom_metrics.families.mauve",
    "MEASURES": "custom_metrics.analysis.measures",
    "PROFILES": "custom_metrics.analysis.measures",
    "domain_measures": "custom_metrics.analysis.measures",
    "find_duplicates": "custom_metrics.analysis.measures",
    "measure_pairs": "custom_metrics.analysis.measures",
    "measure_token_pairs": "custom_metrics.analysis.measures",
    "ngram_coverage": "custom_metrics.analysis.measures",
    "ngram_diversity": "custom_metrics.analysis.measures",
    "novel_ngram_ratio": "custom_metrics.analysis.measures",
    "pair_measures": "custom_metrics.analysis.measures",
    "summarize_pairs": "custom_metrics.analysis.measures",
    "meteor_per_document": "custom_metrics.families.meteor",
    "meteor_scores": "custom_metrics.families.meteor",
    "perplexity_per_text": "custom_metrics.families.perplexity",
    "perplexity_scores": "custom_metrics.families.perplexity",
    "rouge_scores": "custom_metrics.families.rouge",
    "ENGLISH_STOPWORDS": "custom_metrics.stopwords",
    "aggregate_shift": "custom_metrics.analysis.token_shift",
    "domain_word_mask": "custom_metrics.analysis.token_shift",
    "position_shift": "custom_metrics.analysis.token_shift",
    "summarize_shift": "custom_metrics.analysis.token_shift",
    "count_tokens": "custom_metrics.tokenize",
    "word_tokenize": "custom_metrics.tokenize",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'custom_metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


__all__ = [
    "medqsum_battery", "bleu_scores", "sentence_bleu_scores", "corpus_sacrebleu", "chrf_scores",
    "sentence_chrf_scores", "meteor_scores", "meteor_per_document", "blanc_scores",
    "blanc_help_per_document", "blanc_tune_per_document", "perplexity_scores", "perplexity_per_text",
    "mauve_scores", "ModelUnavailable",
    "FACETS", "extract_facets", "fm_aggregate", "fm_scores", "parse_facets",
    "fkgl", "focus_f1", "keyword_success_rate", "length_bin", "length_scores", "readability_scores",
    "MEASURES", "PROFILES", "domain_measures", "domainsum_fragments", "find_duplicates",
    "longest_match_fragments", "measure_pairs", "measure_token_pairs", "newsroom_fragments",
    "ngram_coverage", "ngram_diversity", "novel_ngram_ratio", "pair_measures", "summarize_pairs",
    "ADAPTEVAL_METRICS", "ENGLISH_STOPWORDS", "JudgeConfig", "JudgeConfigError", "JudgeError",
    "JudgeRequestError", "JudgeResult", "JudgeStats", "VocabularyNotFoundError", "adapteval_judge",
    "aggregate_shift", "ask", "bertscore", "build_vocabulary", "count_tokens", "domain_word_mask", "dvo",
    "dvo_scores", "dvo_token", "dvo_token_scores", "judge_scores", "judge_scores_async", "judge_texts",
    "judge_texts_async",
    "load_vocabulary", "notice_judge_skipped", "position_shift",
    "rouge_scores", "summarize_shift", "vocabulary_path", "word_tokenize",
]
