"""Metric library of the domain-summarization suite.

Plain functions over strings and lists, no harness import, batched. Heavy scorers
(BERTScore encoder, judge client, language models) are loaded lazily and kept per
process. See docs/metrics.md ("Python API") for the public functions.
"""

from custom_metrics.battery import medqsum_battery
from custom_metrics.bertscore import bertscore
from custom_metrics.blanc import blanc_help_per_document, blanc_scores, blanc_tune_per_document
from custom_metrics.bleu import bleu_scores, chrf_scores, corpus_sacrebleu, sentence_bleu_scores, sentence_chrf_scores
from custom_metrics.ccs import fkgl, focus_f1, keyword_success_rate, length_bin, length_scores, readability_scores
from custom_metrics.dvo import (
    VocabularyNotFoundError,
    build_vocabulary,
    dvo,
    dvo_scores,
    dvo_token,
    dvo_token_scores,
    load_vocabulary,
    vocabulary_path,
)
from custom_metrics.fm import FACETS, extract_facets, fm_aggregate, fm_scores, parse_facets
from custom_metrics.fragments import domainsum_fragments, longest_match_fragments, newsroom_fragments
from custom_metrics.judge import (
    JudgeConfig,
    JudgeConfigError,
    JudgeError,
    JudgeRequestError,
    JudgeResult,
    JudgeStats,
    ask,
    judge_scores,
    judge_scores_async,
    judge_texts,
    judge_texts_async,
    notice_judge_skipped,
)
from custom_metrics.judge.prompts import ADAPTEVAL_METRICS, adapteval_judge
from custom_metrics.hf_models import ModelUnavailable
from custom_metrics.mauve import mauve_scores
from custom_metrics.measures import (
    MEASURES,
    PROFILES,
    domain_measures,
    find_duplicates,
    measure_pairs,
    measure_token_pairs,
    ngram_coverage,
    ngram_diversity,
    novel_ngram_ratio,
    pair_measures,
    summarize_pairs,
)
from custom_metrics.meteor import meteor_per_document, meteor_scores
from custom_metrics.perplexity import perplexity_per_text, perplexity_scores
from custom_metrics.rouge import rouge_scores
from custom_metrics.stopwords import ENGLISH_STOPWORDS
from custom_metrics.token_shift import aggregate_shift, domain_word_mask, position_shift, summarize_shift
from custom_metrics.tokenize import count_tokens, word_tokenize

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
