"""Domain Vocabulary Overlap (DVO), AdaptEval's measure of domain-adapted wording.

Paper: Afzal, Chalumattu, Matthes, Mascarell, "AdaptEval: Evaluating Large Language
Models on Domain Adaptation for Text Summarization" (2024, arXiv:2407.11591), Section 4.
Reference implementation: the authors' release, https://github.com/anum94/AdaptEval,
``metrics/vocab_overlap.py`` (``VocabOverlap``); this module agrees with it as follows.

Domain vocabulary (:func:`build_vocabulary`)
    the ``size`` (10,000) most frequent tokens of the domain's *training documents*
    (the articles, not the summaries), tokens = ``nltk.word_tokenize(text.lower())``
    as in the release (:func:`custom_metrics.tokenize.word_tokenize`: NLTK's own
    tokenizer with its English Punkt data bundled, no download at run time),
    English stopwords removed (NLTK's list, bundled in :mod:`custom_metrics.stopwords`),
    punctuation-only tokens removed, numbers kept. Ties in frequency are broken by the
    word's code-point order, so the list is deterministic (the release relies on
    ``Counter.most_common``, i.e. first-seen order).
    Deliberate difference: the release removes only a fixed list of 30 symbols, so its
    vocabularies keep some punctuation tokens (``?``, ``''``, a backquote, ``\\\\``); following
    the AdaptEval issue of this project ("excluding punctuation") we drop every token
    without a letter or digit (:func:`custom_metrics.tokenize.is_punct`).

DVO of one summary (:func:`dvo_scores`), exactly the release's
``calculate_vocabulary_overlap``::

    tokens = word_tokenize(summary.lower())          # ALL tokens, stopwords and
                                                     # punctuation included
    DVO    = |set(tokens) ∩ vocabulary| / len(tokens) × 100

The numerator counts *distinct* domain words, the denominator *all* tokens with
repetition, so a summary repeating one domain word scores low. An empty (or
whitespace-only) summary has no tokens and scores 0, as in the release, and still
counts in the mean. :func:`dvo` is the mean over summaries (the release's ``np.mean``);
no summaries at all gives NaN (the mean of nothing), not an exception.

Token-level variant (:func:`dvo_token`, not in the paper): the share of summary tokens,
with repetition, that are domain words: ``|{i : tokens[i] ∈ vocabulary}| / len(tokens)
× 100``. Always >= DVO.

Vocabulary files (:func:`write_vocabulary`, :func:`load_vocabulary`): UTF-8 text, a
first line ``# {JSON header}`` (format, benchmark, subset, source, size, documents,
words, tokens, date, tokenizer, tokenizer_info, stopwords), then one
``word<TAB>count`` line per word, most frequent first. :func:`load_vocabulary` also
reads the release's own files (one word per line, no header, no count), e.g.
``arxiv_top10000_vocabulary.txt``.

Where tasks find them (:func:`vocabulary_path`): ``VOCAB_DIR/<benchmark>/<subset>.tsv``
with ``VOCAB_DIR`` = task metadata ``vocab_dir``, else ``$DOMSUM_VOCAB_DIR``, else
``~/.cache/domsum/vocab``; ``domsum build-vocab`` writes them there. That order is the
suite's settings resolver's (``lm_eval_tasks.settings``, setting ``vocab_dir``): the
functions here take the folder it resolved as an argument and read no environment
variable themselves, so one place decides what a setting's value is.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError
from custom_metrics.registry import Batch, Context, Family, Key, ScorerUnavailable
from custom_metrics.setting import Setting
from custom_metrics.stopwords import ENGLISH_STOPWORDS
from custom_metrics.tokenize import (
    chunk_keys,
    is_punct,
    iter_chunk_tokens,
    tokenizer_info,
    word_tokenize,
)

__all__ = [
    "DEFAULT_VOCAB_DIR",
    "DEFAULT_VOCAB_SIZE",
    "ENV_VOCAB_DIR",
    "VOCAB_FORMAT",
    "Vocabulary",
    "VocabularyBuilder",
    "VocabularyError",
    "VocabularyNotFoundError",
    "build_command",
    "build_vocabulary",
    "build_vocabulary_counts",
    "dvo",
    "dvo_scores",
    "dvo_token",
    "dvo_token_scores",
    "is_vocabulary_word",
    "load_vocabulary",
    "read_vocabulary",
    "vocabulary_dir",
    "vocabulary_path",
    "write_vocabulary",
]

DEFAULT_VOCAB_SIZE = 10000
ENV_VOCAB_DIR = "DOMSUM_VOCAB_DIR"
DEFAULT_VOCAB_DIR = "~/.cache/domsum/vocab"
VOCAB_FORMAT = "domsum-vocab/1"
VOCAB_SUFFIX = ".tsv"
TOKENIZER_NAME = "nltk.word_tokenize, lowercased (custom_metrics.tokenize.word_tokenize)"
STOPWORDS_NAME = "nltk english (custom_metrics.stopwords)"


class VocabularyError(SuiteError, ValueError):
    """A vocabulary file is malformed, empty, or cannot be used."""


class VocabularyNotFoundError(VocabularyError, FileNotFoundError):
    """No vocabulary file where the task looks; the message names the build command."""


# --------------------------------------------------------------------------- building


def is_vocabulary_word(token: str) -> bool:
    """Whether a (lowercased) token may enter a domain vocabulary.

    Not an English stopword and not punctuation-only; numbers (``1``, ``0.5``,
    ``-1`` keeps ``1``) and mixed tokens (``covid-19``, ``\\frac``) are kept.
    """
    return token not in ENGLISH_STOPWORDS and not is_punct(token)


def _top(counts: dict[str, int], size: int) -> list[tuple[str, int]]:
    """The ``size`` most frequent eligible words, ties by code-point order."""
    if size <= 0:
        raise ValueError(f"vocabulary size must be positive, got {size}")
    items = ((w, n) for w, n in counts.items() if is_vocabulary_word(w))
    return heapq.nsmallest(size, items, key=lambda wn: (-wn[1], wn[0]))


@dataclass
class VocabularyBuilder:
    """Streaming, exact token counter for domain vocabularies.

    Why this shape: NLTK's word tokenizer runs at about 0.15 M tokens/s. Its tokens
    never span whitespace within a Punkt sentence, so we count the sentences' chunk
    keys (:func:`custom_metrics.tokenize.chunk_keys`: whitespace chunks, with the
    context the Treebank rules see) with ``Counter.update`` (C speed) and tokenize
    each *distinct* key once, multiplying by its count -- the same as
    :func:`custom_metrics.tokenize.count_tokens`, which this reproduces exactly.
    Distinct keys are flushed into token counts whenever more than ``max_chunks``
    accumulate, which bounds memory on corpora of any size (a flushed key seen again
    is simply tokenized again).

    ``documents``, ``words`` (whitespace-delimited) and ``tokens`` (word tokens, all
    of them) are counted for the vocabulary header and the benchmark.
    """

    max_chunks: int = 2_000_000
    documents: int = 0
    words: int = 0
    tokens: int = 0
    _chunks: Counter = field(default_factory=Counter, repr=False)
    _counts: Counter = field(default_factory=Counter, repr=False)

    def add(self, text: str | None) -> None:
        """Count one document (``None`` and empty strings count as empty documents)."""
        self.documents += 1
        if not text:
            return
        text = text.lower()
        self.words += len(text.split())
        self._chunks.update(chunk_keys(text))
        if len(self._chunks) > self.max_chunks:
            self._flush()

    def add_many(self, texts: Iterable[str | None]) -> VocabularyBuilder:
        """Count every document of ``texts``; returns ``self`` for chaining."""
        for text in texts:
            self.add(text)
        return self

    def _flush(self) -> None:
        counts = self._counts
        n_tokens = 0
        chunks = self._chunks
        for key, toks in iter_chunk_tokens(chunks):
            n = chunks[key]
            for tok in toks:
                counts[tok] += n
            n_tokens += n * len(toks)
        self.tokens += n_tokens
        self._chunks.clear()

    def counts(self) -> Counter:
        """Frequencies of every token seen so far (stopwords and punctuation included)."""
        self._flush()
        return self._counts

    def top(self, size: int = DEFAULT_VOCAB_SIZE) -> list[tuple[str, int]]:
        """``(word, count)`` of the ``size`` most frequent vocabulary words."""
        return _top(self.counts(), size)


def build_vocabulary_counts(
    texts: Iterable[str | None], size: int = DEFAULT_VOCAB_SIZE
) -> list[tuple[str, int]]:
    """``(word, count)`` pairs of the domain vocabulary of ``texts``, most frequent first."""
    return VocabularyBuilder().add_many(texts).top(size)


def build_vocabulary(texts: Iterable[str | None], size: int = DEFAULT_VOCAB_SIZE) -> list[str]:
    """The domain vocabulary of ``texts`` (training documents), most frequent first.

    The ``size`` most frequent lowercased word tokens that are neither English
    stopwords nor punctuation; equal counts are ordered by code point. Fewer than
    ``size`` words come back when the corpus has fewer.
    """
    return [w for w, _ in build_vocabulary_counts(texts, size)]


# --------------------------------------------------------------------------- scoring


def _vocab_set(vocabulary: Iterable[str]) -> frozenset[str] | set[str]:
    if isinstance(vocabulary, (set, frozenset)):
        vocab = vocabulary
    elif isinstance(vocabulary, str):
        raise TypeError("vocabulary must be a collection of words, not one string")
    else:
        vocab = frozenset(vocabulary)
    if not vocab:
        raise VocabularyError("the domain vocabulary is empty: DVO would be 0 for every summary")
    return vocab


def dvo_scores(predictions: Iterable[str | None], vocabulary: Iterable[str]) -> list[float]:
    """Per-summary DVO in percent: ``|set(tokens) ∩ V| / len(tokens) × 100``.

    ``tokens`` are all lowercased word tokens of the summary (stopwords and
    punctuation included, as in the release); an empty summary scores 0.
    """
    vocab = _vocab_set(vocabulary)
    scores = []
    for text in predictions:
        tokens = word_tokenize(text or "")
        scores.append(len(vocab.intersection(tokens)) / len(tokens) * 100 if tokens else 0.0)
    return scores


def dvo(predictions: Sequence[str | None], vocabulary: Iterable[str]) -> float:
    """Domain Vocabulary Overlap in percent, mean of :func:`dvo_scores` (NaN if no summaries)."""
    scores = dvo_scores(predictions, vocabulary)
    return math.fsum(scores) / len(scores) if scores else math.nan


def dvo_token_scores(predictions: Sequence[str | None], vocabulary: Iterable[str]) -> list[float]:
    """Per-summary token-level DVO in percent: share of tokens (with repetition) in V."""
    vocab = _vocab_set(vocabulary)
    scores = []
    for text in predictions:
        tokens = word_tokenize(text or "")
        hits = sum(1 for t in tokens if t in vocab)
        scores.append(hits / len(tokens) * 100 if tokens else 0.0)
    return scores


def dvo_token(predictions: Sequence[str | None], vocabulary: Iterable[str]) -> float:
    """Token-level DVO in percent, mean over summaries (NaN if no summaries)."""
    scores = dvo_token_scores(predictions, vocabulary)
    return math.fsum(scores) / len(scores) if scores else math.nan


# --------------------------------------------------------------------------- files


@dataclass
class Vocabulary:
    """A vocabulary file's content: words (most frequent first), counts, header."""

    words: list[str]
    counts: list[int | None]
    header: dict[str, Any]
    path: Path | None = None


def write_vocabulary(path: str | os.PathLike, entries: Sequence[tuple[str, int]],
                     **header: Any) -> Path:
    """Write ``(word, count)`` entries with a JSON header line; atomic replace.

    ``header`` adds provenance (``benchmark``, ``subset``, ``source``, ``documents``,
    ``words``, ...); ``format``, ``size``, ``date``, ``tokenizer``, ``tokenizer_info``
    (NLTK version and Punkt data source, :func:`custom_metrics.tokenize.tokenizer_info`)
    and ``stopwords`` are filled in.
    """
    path = Path(path)
    for word, count in entries:
        if not word or any(c.isspace() for c in word):
            raise VocabularyError(f"invalid vocabulary word {word!r} (empty or with whitespace)")
    meta = {
        "format": VOCAB_FORMAT,
        **header,
        "size": len(entries),
        "date": header.get("date")
        or _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tokenizer": TOKENIZER_NAME,
        "tokenizer_info": tokenizer_info("nltk"),
        "stopwords": STOPWORDS_NAME,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("# " + json.dumps(meta, ensure_ascii=False, sort_keys=True) + "\n")
        fh.writelines(f"{w}\t{n}\n" for w, n in entries)
    os.replace(tmp, path)
    return path


def read_vocabulary(path: str | os.PathLike) -> Vocabulary:
    """Read a vocabulary file (ours, or the AdaptEval release's one-word-per-line)."""
    path = Path(os.path.expanduser(str(path)))
    if not path.is_file():
        raise VocabularyNotFoundError(f"vocabulary file not found: {path}")
    words: list[str] = []
    counts: list[int | None] = []
    header: dict[str, Any] = {}
    with open(path, "rb") as fh:
        if b"\x00" in fh.read(8192):
            raise VocabularyError(f"{path}: NUL bytes: this is a binary file, not a vocabulary (one word per "
                                  f"line, UTF-8); build one with `domsum build-vocab`")
        fh.seek(0)
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                raise VocabularyError(f"{path}, line {lineno}: not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                                      f"re-encode the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)") from None
            if lineno == 1 and line.startswith("# {"):
                try:
                    header = json.loads(line[2:])
                except json.JSONDecodeError as exc:
                    raise VocabularyError(f"{path}, line 1: bad JSON header ({exc.msg})") from None
                continue
            if not line.strip():
                continue
            word, tab, count = line.partition("\t")
            word = word.strip()
            if tab:
                try:
                    counts.append(int(count))
                except ValueError:
                    raise VocabularyError(
                        f"{path}, line {lineno}: count {count!r} is not an integer"
                    ) from None
            else:
                counts.append(None)
            words.append(word)
    if not words:
        raise VocabularyError(f"{path}: the vocabulary file has no words")
    if len(set(words)) != len(words):
        dup = next(w for w, n in Counter(words).items() if n > 1)
        raise VocabularyError(f"{path}: word {dup!r} appears more than once")
    return Vocabulary(words, counts, header, path)


def load_vocabulary(path: str | os.PathLike) -> list[str]:
    """The words of a vocabulary file, most frequent first."""
    return read_vocabulary(path).words


def vocabulary_dir(vocab_dir: str | os.PathLike | None = None) -> Path:
    """The vocabulary folder ``vocab_dir`` (as the settings resolver gave it: metadata,
    else ``$DOMSUM_VOCAB_DIR``, else the default) expanded and absolute; None or empty:
    :data:`DEFAULT_VOCAB_DIR` (``~/.cache/domsum/vocab``)."""
    value = DEFAULT_VOCAB_DIR if vocab_dir in (None, "") else vocab_dir
    return Path(os.path.expanduser(str(value))).resolve()


def build_command(benchmark: str, subset: str, vocab_dir: str | os.PathLike | None = None) -> str:
    """The shell command that builds the missing vocabulary."""
    cmd = f"domsum build-vocab --benchmark {benchmark} --subsets {subset}"
    if vocab_dir not in (None, ""):
        cmd += f" --vocab-dir {vocab_dir}"
    return cmd + " [--data-dir DIR]"


def vocabulary_path(benchmark: str, subset: str, vocab_dir: str | os.PathLike | None = None,
                    must_exist: bool = True) -> Path:
    """``VOCAB_DIR/<benchmark>/<subset>.tsv``, the file a task's DVO reads.

    ``vocab_dir``: the resolved setting ``vocab_dir`` (task metadata, else
    ``$DOMSUM_VOCAB_DIR``, else the default); None: ``~/.cache/domsum/vocab``. With ``must_exist`` a
    missing file raises :class:`VocabularyNotFoundError` naming the build command.
    """
    root = vocabulary_dir(vocab_dir)
    path = root / benchmark / f"{subset}{VOCAB_SUFFIX}"
    if must_exist and not path.is_file():
        raise VocabularyNotFoundError(
            f"no domain vocabulary for {benchmark}/{subset}: expected {path}. Build it "
            f"from the {benchmark}/{subset} train split with `{build_command(benchmark, subset, root)}` "
            f"(DIR: the data mirror; without it the hub is used), or point metadata "
            f"'vocab_dir' (--metadata '{{\"vocab_dir\": \"DIR\"}}') or ${ENV_VOCAB_DIR} at "
            f"a directory holding {benchmark}/{subset}{VOCAB_SUFFIX}."
        )
    return path


# =========================================================================== the family record


def _vocabulary(ctx: Context) -> tuple[str, list[str]]:
    """(path, words) of the vocabulary DVO reads.

    ``ctx.options["vocabulary_file"]`` names a file directly (re-scoring a file whose
    domain has no vocabulary under ``vocab_dir``); otherwise the benchmark/subset file
    under ``vocab_dir`` is used, as in a harness run.
    """
    given = ctx.options.get("vocabulary_file")
    if given:
        path = Path(str(given)).expanduser()
        if not path.is_file():
            raise VocabularyNotFoundError(f"vocabulary file {path} not found")
    else:
        path = vocabulary_path(ctx.benchmark, ctx.subset, ctx.settings.get("vocab_dir"))
    return str(path), load_vocabulary(path)


def _tokenizer_info() -> dict[str, Any]:
    from custom_metrics.tokenize import tokenizer_info

    return tokenizer_info("nltk")


def _dvo_check(ctx: Context) -> None:
    try:
        _vocabulary(ctx)
    except (VocabularyError, OSError) as exc:
        raise ScorerUnavailable(f"DVO: {exc}") from exc


def _dvo_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.progress import track

    path, vocab = _vocabulary(ctx)
    ctx.record["vocabulary_used"] = path
    return {"dvo": dvo_scores(track(batch.predictions, ctx.bar_label("DVO"), enabled=ctx.progress), vocab)}


def _dvo_describe(ctx: Context) -> dict[str, Any]:
    """The vocabulary file and its size (a paper's "top 10k words" is checked against it) and the tokenizer."""
    path, words = _vocabulary(ctx)
    return {"vocabulary_used": path, "vocabulary_words": len(words), "dvo_tokenizer": _tokenizer_info()}


DVO = Family(
    name="dvo",
    keys=(Key("dvo", description="share of the summary's vocabulary words in the domain vocabulary",
              display="DVO", unit="percent"),),
    score=_dvo_score,
    description="Domain Vocabulary Overlap (AdaptEval): NLTK-style tokens, stopwords and punctuation removed.",
    source="custom_metrics.families.dvo (AdaptEval release)",
    needs=("vocabulary",),
    settings=("vocab_dir",),
    options=("vocabulary_file",),
    check=_dvo_check,
    describe=_dvo_describe,
)

SETTING_ROWS = (
    Setting("vocab_dir", ENV_VOCAB_DIR, str, DEFAULT_VOCAB_DIR,
            "Folder of the domain vocabularies DVO reads (`domsum build-vocab`).", "scorers", after="use_wordnet",
            flag="vocabulary root (default: DOMSUM_VOCAB_DIR)"),
)
METRIC_FAMILIES = (DVO,)
