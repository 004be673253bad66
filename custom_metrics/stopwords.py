"""NLTK's English stopword list, bundled so that no ``nltk.download`` is needed.

Why: the AdaptEval release builds its domain vocabulary with
``nltk.corpus.stopwords.words('english')``, which needs the ``stopwords`` data
package (a network download at run time). This is the same list, as data.

Source: ``corpora/stopwords/english`` of the NLTK data collection
(https://github.com/nltk/nltk_data), current version: 198 words, after nltk_data commit
47111d8 (February 2025, nltk/nltk issue #3358) added 19 pronoun contractions
(:data:`NLTK_2025_ADDITIONS`) to the 179-word list that NLTK shipped before (and the
AdaptEval release of 2024 used). Every one of those 19 contains an apostrophe, and
NLTK's ``word_tokenize`` (:func:`custom_metrics.tokenize.word_tokenize`) splits
contractions (``he'd`` -> ``he`` ``'d``), so they can never match a token: both
versions filter exactly the same tokens.

The order below is the file's order; only membership matters to the metrics.
"""

from __future__ import annotations

__all__ = ["ENGLISH_STOPWORDS", "ENGLISH_STOPWORD_LIST", "NLTK_2025_ADDITIONS"]

ENGLISH_STOPWORD_LIST: tuple[str, ...] = (
    "a", "about", "above", "after", "again", "against", "ain", "all", "am", "an",
    "and", "any", "are", "aren", "aren't", "as", "at", "be", "because", "been",
    "before", "being", "below", "between", "both", "but", "by", "can", "couldn",
    "couldn't", "d", "did", "didn", "didn't", "do", "does", "doesn", "doesn't",
    "doing", "don", "don't", "down", "during", "each", "few", "for", "from",
    "further", "had", "hadn", "hadn't", "has", "hasn", "hasn't", "have", "haven",
    "haven't", "having", "he", "he'd", "he'll", "her", "here", "hers", "herself",
    "he's", "him", "himself", "his", "how", "i", "i'd", "if", "i'll", "i'm", "in",
    "into", "is", "isn", "isn't", "it", "it'd", "it'll", "it's", "its", "itself",
    "i've", "just", "ll", "m", "ma", "me", "mightn", "mightn't", "more", "most",
    "mustn", "mustn't", "my", "myself", "needn", "needn't", "no", "nor", "not",
    "now", "o", "of", "off", "on", "once", "only", "or", "other", "our", "ours",
    "ourselves", "out", "over", "own", "re", "s", "same", "shan", "shan't", "she",
    "she'd", "she'll", "she's", "should", "shouldn", "shouldn't", "should've",
    "so", "some", "such", "t", "than", "that", "that'll", "the", "their",
    "theirs", "them", "themselves", "then", "there", "these", "they", "they'd",
    "they'll", "they're", "they've", "this", "those", "through", "to", "too",
    "under", "until", "up", "ve", "very", "was", "wasn", "wasn't", "we", "we'd",
    "we'll", "we're", "were", "weren", "weren't", "we've", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "won",
    "won't", "wouldn", "wouldn't", "y", "you", "you'd", "you'll", "your",
    "you're", "yours", "yourself", "yourselves", "you've",
)

#: The 19 words nltk_data added in 2025; the 179-word list is the rest.
NLTK_2025_ADDITIONS: frozenset[str] = frozenset({
    "he'd", "he'll", "he's", "i'd", "i'll", "i'm", "i've", "it'd", "it'll",
    "she'd", "she'll", "they'd", "they'll", "they're", "they've", "we'd",
    "we'll", "we're", "we've",
})

#: Membership test used by the metrics.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(ENGLISH_STOPWORD_LIST)
