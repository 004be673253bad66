"""Word tokenizers of the papers' releases, available offline.

``word_tokenize`` -- NLTK's ``word_tokenize`` (the default of every metric here)
    The DomainSum release (``get_statistics.py``) and the AdaptEval release
    (``metrics/vocab_overlap.py``) both call ``nltk.word_tokenize(text.lower())``: the
    English Punkt sentence splitter, then NLTK's improved Treebank word tokenizer
    (``NLTKWordTokenizer``) on each sentence. :func:`word_tokenize` gives exactly
    that token list (lowercasing *before* tokenizing, as the releases do; Punkt's
    decisions depend on case). Treebank conventions follow: ``obama's`` -> ``obama``
    ``'s``, ``cannot`` -> ``can`` ``not``, ``mr.`` and ``u.s.`` stay whole inside a
    sentence while a sentence-final period is split off, double quotes become
    ````/``''``.

    Punkt data: NLTK >= 3.9 loads ``tokenizers/punkt_tab/english/`` from
    ``nltk.data.path``. The English model ships with this package
    (``custom_metrics/nltk_data``, Apache-2.0, provenance in its README) and is
    *appended* to ``nltk.data.path`` -- when ``nltk.data`` is first imported, or at
    once if it already is -- so a user's own ``nltk_data`` still takes precedence
    and nothing is ever downloaded. :func:`tokenizer_info` says which copy was
    used and which NLTK version ran: the releases' numbers differ between NLTK
    versions (e.g. 3.8.1 and 3.10.4), so results record it.

    Speed (same output): NLTK applies a cascade of ~25 regular expressions, each
    under a time guard, to every sentence (~0.13 M tokens/s). Here each Punkt
    sentence is cut at whitespace and each distinct chunk is run through the *same*
    ``NLTKWordTokenizer`` once, memoised, with the misses of a text tokenized together
    in one call (:func:`chunk_keys`, :func:`chunk_tokens`): 1.5x NLTK's speed on
    unseen text, 4-5x once the common words are memoised. That is exact because the
    Treebank rules never join across whitespace and look at most one character past
    a chunk, except at the sentence end; the key of a chunk therefore carries what
    the rules can see: the neighbouring whitespace character for chunks with a
    quote, and the whole sentence tail for the last chunk (the final-period rule
    looks through trailing closing brackets and quotes). ``tests/unit/test_tokenizers.py``
    checks equality with ``nltk.word_tokenize`` on hand cases, on every fixture text
    and on generated text.

``spacy_tokenize`` -- spaCy's English tokenizer (Newsroom, SummEval, HELM)
    Newsroom's ``Fragments`` (Grusky et al., 2018), SummEval's ``data_stats`` and
    HELM tokenize with spaCy's English pipeline (only its rule-based tokenizer acts:
    the taggers are disabled), keep every token (whitespace tokens too) and
    lowercase the tokens *after* tokenizing. ``spacy.blank("en")`` has the same
    tokenizer and needs no model download. Its rules change a little between spaCy
    versions, so :func:`tokenizer_info` records the version.

``word_tokenize_compat`` -- the former pure-Python approximation, kept under its
    own name for comparisons only; no metric uses it (it differs from NLTK on most
    news documents: ``' s``, split ``mr.``/``u.s.``, ``cannot`` kept whole).
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import re
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "NLTK_DATA_DIR",
    "PUNKT_RESOURCE",
    "TOKENIZERS",
    "chunk_keys",
    "chunk_tokens",
    "count_tokens",
    "get_tokenizer",
    "is_punct",
    "iter_chunk_tokens",
    "register_nltk_data",
    "spacy_tokenize",
    "tokenize_many",
    "tokenizer_info",
    "word_tokenize",
    "word_tokenize_compat",
]

#: the folder added to ``nltk.data.path``: English ``punkt_tab`` (see its README.md)
NLTK_DATA_DIR = Path(__file__).resolve().parent / "nltk_data"
#: the resource ``nltk.word_tokenize`` loads for English (NLTK >= 3.9)
PUNKT_RESOURCE = "tokenizers/punkt_tab/english/"
_LANGUAGE = "english"

# --------------------------------------------------------------------------- NLTK data


def register_nltk_data() -> None:
    """Append the bundled English Punkt data to ``nltk.data.path`` (idempotent).

    Appended, never prepended: an ``nltk_data`` of the user's (``$NLTK_DATA``,
    ``~/nltk_data``, ...) that has ``punkt_tab/english`` is found first.
    """
    import nltk.data

    folder = str(NLTK_DATA_DIR)
    if folder not in nltk.data.path:
        nltk.data.path.append(folder)


class _RegisterAfterImport(importlib.abc.MetaPathFinder):
    """One-shot import hook: runs :func:`register_nltk_data` right after
    ``nltk.data`` is first imported, so that importing this package makes plain
    ``nltk.word_tokenize`` work offline without importing NLTK (about 1 s) itself."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "nltk.data":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            folder = str(NLTK_DATA_DIR)
            if folder not in module.path:
                module.path.append(folder)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "nltk.data" in sys.modules:
    register_nltk_data()
elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterImport())


@functools.lru_cache(maxsize=None)
def _nltk() -> tuple[Callable[[str], list[str]], Callable[[str], list[str]]]:
    """NLTK's English sentence splitter and word tokenizer (the objects
    ``nltk.word_tokenize`` uses), after registering the bundled data."""
    register_nltk_data()
    from nltk.tokenize import NLTKWordTokenizer, sent_tokenize

    treebank = NLTKWordTokenizer()
    return functools.partial(sent_tokenize, language=_LANGUAGE), treebank.tokenize


def _punkt_location() -> tuple[str, str]:
    """``(source, path)`` of the ``punkt_tab/english`` that NLTK finds."""
    register_nltk_data()
    import nltk.data

    try:
        found = Path(str(nltk.data.find(PUNKT_RESOURCE))).resolve()
    except LookupError:
        return "missing", ""
    bundled = NLTK_DATA_DIR.resolve()
    source = "bundled" if bundled in found.parents else "user nltk_data"
    return source, str(found)


# --------------------------------------------------------------------------- NLTK, exact and memoised

# Characters the final-period rule of NLTKWordTokenizer looks through (with spaces).
_CLOSERS = "]})>\"'»”’"
ChunkKey = Hashable
_MAX_CACHE = 500_000
_cache: dict[ChunkKey, tuple[str, ...]] = {}
# Separator token for tokenizing many plain chunks in one call: no rule touches it
# (not a word character, not whitespace, in no character class).
_SEP = "\ue000"
_BATCH = 2048


def _only_closers(chunk: str) -> bool:
    return not chunk.strip(_CLOSERS)


# Whitespace to ``str.split`` but not to the ``regex`` engine NLTK >= 3.10 compiles
# most of its rules with (``\s`` there is Unicode White_Space, which these lack).
_ODD_WS = "\x1c\x1d\x1e\x1f"
_ODD_WS_RE = re.compile(f"[{_ODD_WS}]")


def _ws(ch: str) -> str:
    """The neighbouring whitespace as the rules see it: a literal space, another
    whitespace character the rules all treat alike (shown as a newline), or an odd
    one (:data:`_ODD_WS`) kept as is."""
    if ch == " ":
        return " "
    return ch if ch in _ODD_WS else "\n"


def _sentence_keys(sentence: str, out: list[ChunkKey]) -> None:
    """Append the chunk keys of one Punkt sentence to ``out``.

    Key kinds: a plain ``str`` (a chunk without quotes whose tokens do not depend on
    its neighbours: any chunk before the tail, and a tail the final-period rule
    cannot change); ``("q", before, chunk, after)`` for a chunk with ``"`` or ``'``
    (the quote rules look at the whitespace character on each side; ``before`` is
    ``""`` at the sentence start), and for every chunk of a sentence with an odd
    whitespace character (:data:`_ODD_WS`); ``("t", before, tail)`` for any other
    sentence tail: the last chunk that is not only closing brackets/quotes, through
    the end of the sentence (original whitespace kept). A plain ``word.`` tail is
    keyed as ``word`` and ``.``: the final-period rule only puts a space before it.
    """
    chunks = sentence.split()
    n = len(chunks)
    if not n:
        return
    k = n - 1
    while k > 0 and _only_closers(chunks[k]):
        k -= 1
    # start of the tail in ``sentence``: walk back over the chunks from the end
    pos = len(sentence)
    for j in range(n - 1, k - 1, -1):
        pos = sentence.rfind(chunks[j], 0, pos)
    odd = _ODD_WS_RE.search(sentence) is not None
    if odd or "'" in sentence or '"' in sentence:
        head = sentence[:pos]
        for m in re.finditer(r"\S+", head):
            chunk = m.group()
            if odd or "'" in chunk or '"' in chunk:
                s, e = m.span()
                before = _ws(head[s - 1]) if s else ""
                out.append(("q", before, chunk, _ws(sentence[e])))
            else:
                out.append(chunk)
    else:
        out.extend(chunks[:k])
    last = chunks[-1]
    if k == n - 1 and not odd and "'" not in last and '"' not in last:
        core = last.rstrip(_CLOSERS)
        if not core.endswith("."):  # no period for the final-period rule
            out.append(last)
            return
        if core == last and len(last) > 1 and last[-2] != ".":
            out += (last[:-1], ".")
            return
    out.append(("t", _ws(sentence[pos - 1]) if pos else "", sentence[pos:]))


def chunk_keys(text: str) -> list[ChunkKey]:
    """Memoisable pieces of ``text`` (not lowercased here): Punkt sentences cut at
    whitespace; the tokens of ``text`` are the :func:`chunk_tokens` of the keys in
    order, and equal those of ``nltk.word_tokenize(text)``."""
    if not text:
        return []
    split_sentences = _nltk()[0]
    out: list[ChunkKey] = []
    for sentence in split_sentences(text):
        _sentence_keys(sentence, out)
    return out


def _tokenize_key(key: ChunkKey) -> tuple[str, ...]:
    """NLTK's tokens of one key: ``NLTKWordTokenizer`` on the chunk with a sentinel
    word ``x`` in place of the rest of the sentence, separated by the whitespace
    character that separates it there; the sentinel's own token is dropped."""
    treebank = _nltk()[1]
    if isinstance(key, str):
        return tuple(treebank("x " + key + " x")[1:-1])
    kind, before, *rest = key
    prefix = "x" + before if before else ""
    if kind == "q":
        chunk, after = rest
        full = treebank(prefix + chunk + after + "x")[:-1]
    else:
        full = treebank(prefix + rest[0])
    return tuple(full[1:] if prefix else full)


def _tokenize_plain(chunks: list[str]) -> list[tuple[str, ...]]:
    """Tokens of many plain keys from one ``NLTKWordTokenizer`` call (its per-call
    cost dominates on short strings): ``SEP c1 SEP c2 ... SEP``, split at ``SEP``."""
    treebank = _nltk()[1]
    groups: list[tuple[str, ...]] = []
    current: list[str] = []
    for tok in treebank(_SEP + " " + f" {_SEP} ".join(chunks) + " " + _SEP)[1:]:
        if tok == _SEP:
            groups.append(tuple(current))
            current = []
        else:
            current.append(tok)
    if len(groups) != len(chunks) or current:  # cannot happen; never guess
        return [_tokenize_key(c) for c in chunks]
    return groups


def _fill_cache(keys: Iterable[ChunkKey]) -> None:
    """Tokenize every key of ``keys`` missing from the memo (plain keys in batches)."""
    cache = _cache
    missing = {k for k in keys if k not in cache}
    if not missing:
        return
    if len(cache) + len(missing) > _MAX_CACHE:
        cache.clear()
        missing = set(keys)
    plain = [k for k in missing if isinstance(k, str) and _SEP not in k]
    for i in range(0, len(plain), _BATCH):
        batch = plain[i : i + _BATCH]
        cache.update(zip(batch, _tokenize_plain(batch)))
    for k in missing:
        if k not in cache:
            cache[k] = _tokenize_key(k)


def chunk_tokens(key: ChunkKey) -> tuple[str, ...]:
    """NLTK's tokens of one :func:`chunk_keys` key (memoised)."""
    toks = _cache.get(key)
    if toks is None:
        _fill_cache((key,))
        toks = _cache[key]
    return toks


def iter_chunk_tokens(keys: Iterable[ChunkKey], block: int = 65_536) -> Iterator[tuple[ChunkKey, tuple[str, ...]]]:
    """``(key, tokens)`` for every key, tokenizing the memo's misses in batches."""
    it = iter(keys)
    while True:
        part = list(itertools.islice(it, block))
        if not part:
            return
        _fill_cache(part)
        cache = _cache
        for k in part:
            yield k, cache[k]


def word_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """``nltk.word_tokenize(text.lower())`` (English Punkt + ``NLTKWordTokenizer``),
    as the DomainSum and AdaptEval releases call it; ``lowercase=False`` tokenizes
    ``text`` as given (METEOR). Bundled Punkt data, never a download."""
    if not text:
        return []
    if lowercase:
        text = text.lower()
    keys = chunk_keys(text)
    _fill_cache(keys)
    cache = _cache
    out: list[str] = []
    for key in keys:
        out.extend(cache[key])
    return out


def tokenize_many(texts: Iterable[str], lowercase: bool = True) -> list[list[str]]:
    """:func:`word_tokenize` of each text."""
    return [word_tokenize(t, lowercase) for t in texts]


def count_tokens(texts: Iterable[str], lowercase: bool = True) -> Counter[str]:
    """Token frequencies over ``texts``, identical to counting :func:`word_tokenize`.

    Chunk keys are counted first (``Counter.update`` in C) and each distinct key is
    tokenized once, its count multiplied.
    """
    keys: Counter[ChunkKey] = Counter()
    for text in texts:
        if text:
            keys.update(chunk_keys(text.lower() if lowercase else text))
    counts: Counter[str] = Counter()
    for key, toks in iter_chunk_tokens(keys):
        n = keys[key]
        for tok in toks:
            counts[tok] += n
    return counts


# --------------------------------------------------------------------------- spaCy


@functools.lru_cache(maxsize=None)
def _spacy_tokenizer() -> Callable[[str], Any]:
    import spacy

    return spacy.blank("en").tokenizer


def spacy_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """spaCy's English tokens of ``text``, lowercased *after* tokenizing, every
    token kept (whitespace tokens such as ``"\\n\\n"`` included), as Newsroom's
    ``Fragments`` and SummEval's ``data_stats`` do (``[str(t).lower() for t in
    nlp(text)]``). ``spacy.blank("en")``: rule-based, no model download."""
    if not text:
        return []
    toks = [t.text for t in _spacy_tokenizer()(text)]
    return [t.lower() for t in toks] if lowercase else toks


# --------------------------------------------------------------------------- compat (not NLTK)

_COMPAT_TOKEN_RE = re.compile(r"\w+(?:[-'.,]\w+)*|\.\.\.|--|[^\w\s]")
_COMPAT_CLITIC_RE = re.compile(r"(?:n't|'(?:s|m|d|ll|re|ve))$")


def word_tokenize_compat(text: str, lowercase: bool = True) -> list[str]:
    """The former regex approximation of NLTK's tokenizer (not NLTK; comparisons only).

    Words and numbers keep inner ``-'.,`` (``e-mail``, ``1,000.50``); a clitic is
    split off only inside a word (``john's`` -> ``john 's``), so the pre-tokenized
    ``obama 's`` of CNN/DailyMail gives ``' s`` where NLTK keeps ``'s``; every other
    non-space character is a token (``\\frac`` -> ``\\ frac``); no sentence
    splitting, so ``mr.`` and ``u.s.`` always lose their period; ``cannot`` stays
    whole and double quotes stay ``"``.
    """
    if not text:
        return []
    if lowercase:
        text = text.lower()
    tokens = _COMPAT_TOKEN_RE.findall(text)
    if "'" not in text:
        return tokens
    out: list[str] = []
    for tok in tokens:
        m = _COMPAT_CLITIC_RE.search(tok) if "'" in tok else None
        if m is not None and m.start() > 0:
            out += (tok[: m.start()], tok[m.start():])
        else:
            out.append(tok)
    return out


# --------------------------------------------------------------------------- registry

#: tokenizer names accepted by the metrics and ``domsum domain-stats --tokenizer``
TOKENIZERS: dict[str, Callable[..., list[str]]] = {
    "nltk": word_tokenize,
    "spacy": spacy_tokenize,
    "compat": word_tokenize_compat,
}


def get_tokenizer(name: str | Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """The tokenizer called ``name`` (:data:`TOKENIZERS`), or ``name`` if callable."""
    if callable(name):
        return name
    try:
        return TOKENIZERS[name]
    except KeyError:
        raise ValueError(f"unknown tokenizer {name!r}; choose one of {sorted(TOKENIZERS)}") from None


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def tokenizer_info(name: str = "nltk") -> dict[str, Any]:
    """What a tokenizer is, for results: ``name``, ``function``, ``lowercase`` and,
    per tokenizer, library versions and data source.

    ``nltk``: ``nltk_version``, ``punkt`` (resource), ``punkt_source``
    (``bundled`` = this package's copy, ``user nltk_data`` = found earlier on
    ``nltk.data.path``, ``missing``) and ``punkt_path``. ``spacy``:
    ``spacy_version``. Does not import spaCy for the other tokenizers.
    """
    if name == "nltk":
        source, path = _punkt_location()
        return {
            "name": "nltk",
            "function": "nltk.word_tokenize(text.lower())",
            "lowercase": "before tokenizing",
            "nltk_version": _version("nltk"),
            "punkt": PUNKT_RESOURCE,
            "punkt_source": source,
            "punkt_path": path,
        }
    if name == "spacy":
        return {
            "name": "spacy",
            "function": "[t.text.lower() for t in spacy.blank('en').tokenizer(text)]",
            "lowercase": "after tokenizing",
            "spacy_version": _version("spacy"),
        }
    if name == "compat":
        return {
            "name": "compat",
            "function": "custom_metrics.tokenize.word_tokenize_compat (regex, not NLTK)",
            "lowercase": "before tokenizing",
        }
    raise ValueError(f"unknown tokenizer {name!r}; choose one of {sorted(TOKENIZERS)}")


_PUNCT_RE = re.compile(r"[^\w]+|_+")


def is_punct(token: str) -> bool:
    """True for a token without any letter or digit (punctuation, symbols, ````)."""
    return _PUNCT_RE.fullmatch(token) is not None
