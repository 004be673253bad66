"""``domsum domain-stats``: corpus statistics per domain (DomainSum Table 5, Figures 3 and 4).

For every selected subset (domain) of a suite benchmark, over the chosen splits
(pooled), it computes the eight characteristic measures of
:func:`custom_metrics.domain_measures` (profile ``domainsum``, the DomainSum
release's computation on ``nltk.word_tokenize(text.lower())`` tokens, or
``newsroom``, Grusky et al.'s as in SummEval's ``data_stats``, on lowercased spaCy
tokens; ``--tokenizer nltk|spacy|compat`` overrides the profile's tokenizer and the
one used is recorded with its versions in ``domain_stats.json``) and writes into
``--out``:

* ``domain_stats.csv`` / ``.json`` / ``.md``: Table 5 (one row per domain, with the
  pair counts and the reasons pairs were skipped);
* ``radar_<group>.png``: Figure 3, one radar chart per group of domains, each axis
  normalised by its maximum over the group's domains;
* ``vocab_overlap_<group>.png`` / ``.csv``: Figure 4, pairwise overlap (%) of the
  domains' vocabularies. A domain's vocabulary is its ``--vocab-size`` (10,000) most
  frequent tokens over documents and summaries (the measures' tokens),
  excluding English stopwords (NLTK's list when its data is installed, else a
  bundled copy of it, plus the clitics ``n't``, ``'s``, ...) and punctuation-only
  tokens; ties by token. Overlap(A, B) = ``|A & B| / min(|A|, |B|) * 100``, i.e.
  ``|A & B| / 10,000`` as in the paper when both vocabularies are full. The heat map
  hatches the diagonal (a domain with itself, 100 % by construction) and takes its
  colour scale from the other cells, so that overlaps of a few percent stay apart.

Groups (``--group-by``): ``level`` draws one radar and one overlap map per DomainSum
level (genre, style, topic; another benchmark is one group), the default with
``--level`` or without a selection; ``none`` keeps the selected domains together in
one group named after the benchmark, the default with ``--subsets`` (the user chose
those domains to compare them). A radar needs at least 2 domains with data and an
overlap map at least 2 domains: a group with fewer gets no figure, and the console
and ``domain_stats.md`` say why. Levels and subsets come from the task catalogue
(:mod:`lm_eval_tasks.catalog`); the ``level`` column is always the domain's level.

Data: ``--data-dir`` or ``$DOMSUM_DATA_DIR`` (mirror ``DIR/<benchmark>/<subset>/
<split>.jsonl``), else the hub. Work is spread over ``--workers`` processes in
chunks, with progress bars on stderr (domains, and pairs of the current domain;
``--no-progress`` or ``DOMSUM_PROGRESS=0`` turn them off, ``--quiet`` also the
per-domain timing lines); ``--synthetic N`` times the whole pipeline on N synthetic
news-length pairs (e.g. 287,113 = the CNN/DailyMail train split).

Examples::

    domsum domain-stats --level genre --data-dir lm_eval_tasks/sample_data --out out/stats
    domsum domain-stats --subsets cnndm,pubmed --splits train,test --max-docs 1000
    domsum domain-stats --subsets cnndm,cnn,soccer --group-by level
    domsum domain-stats --benchmark adapteval --profile newsroom
    domsum domain-stats --level genre --profile newsroom --tokenizer nltk
    domsum domain-stats --synthetic 287113 --workers 2 --out out/synthetic
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path

import numpy as np

from custom_metrics.measures import (
    MEASURES,
    PAIR_FIELDS,
    PROFILE_TOKENIZERS,
    PROFILES,
    SKIP_REASONS,
    find_duplicates,
    measure_pairs,
    summarize_pairs,
)
from custom_metrics.tokenize import TOKENIZERS, is_punct, tokenizer_info
from custom_metrics.registry import json_safe
from lm_eval_tasks import catalog
from lm_eval_tasks.settings import resolve

LEVELS = catalog.DOMAINSUM_LEVELS

MEASURE_LABELS = {
    "doc_length": "Doc length",
    "summary_length": "Summary length",
    "compression": "Compression",
    "density": "Density",
    "coverage": "Coverage",
    "doc_diversity": "Doc diversity",
    "summary_diversity": "Summary diversity",
    "abstractiveness": "Abstractiveness",
}

# NLTK's English stopword list (nltk_data corpora/stopwords/english, 179 words),
# used when the NLTK data package is not installed (no download at run time).
BUNDLED_STOPWORDS = """
i me my myself we our ours ourselves you you're you've you'll you'd your yours
yourself yourselves he him his himself she she's her hers herself it it's its itself
they them their theirs themselves what which who whom this that that'll these those am
is are was were be been being have has had having do does did doing a an the and but
if or because as until while of at by for with about against between into through
during before after above below to from up down in out on off over under again
further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don don't
should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't
doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't
mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't
won won't wouldn wouldn't
""".split()
#: tokens our tokenizer splits off contractions: function words, never vocabulary
CLITICS = ("n't", "'s", "'m", "'d", "'ll", "'re", "'ve")


def stopwords() -> tuple[frozenset[str], str]:
    """English stopwords and where they came from (``nltk`` or ``bundled``)."""
    try:
        from nltk.corpus import stopwords as nltk_stopwords

        words = set(nltk_stopwords.words("english"))
        source = "nltk"
    except (LookupError, ImportError, OSError):
        words = set(BUNDLED_STOPWORDS)
        source = "bundled NLTK list"
    return frozenset(words | set(CLITICS)), source


def domain_vocabulary(counts: Counter, size: int, stop: frozenset[str]) -> list[str]:
    """The ``size`` most frequent non-stopword, non-punctuation tokens (ties by token)."""
    items = [(w, c) for w, c in counts.items() if w not in stop and not is_punct(w)]
    items.sort(key=lambda wc: (-wc[1], wc[0]))
    return [w for w, _ in items[:size]]


def overlap_matrix(vocabs: Sequence[Sequence[str]]) -> list[list[float]]:
    """Pairwise ``|A & B| / min(|A|, |B|) * 100`` (nan when one is empty)."""
    sets = [set(v) for v in vocabs]
    out = []
    for a in sets:
        row = []
        for b in sets:
            denom = min(len(a), len(b))
            row.append(len(a & b) / denom * 100 if denom else math.nan)
        out.append(row)
    return out


# ------------------------------------------------------------------ workers


def _work(task: tuple) -> tuple[int, dict[str, np.ndarray], Counter]:
    """Measure one chunk of pairs; count its tokens for the vocabulary in the same pass."""
    index, documents, summaries, vocab_mask, profile, tokenizer = task
    counts: Counter = Counter()
    cols = measure_pairs(documents, summaries, profile, tokenizer, token_counts=counts,
                         count_mask=vocab_mask)
    return index, cols, counts


def analyse_pairs(
    documents: Sequence[str],
    summaries: Sequence[str],
    profile: str = "domainsum",
    executor: Executor | None = None,
    chunk_size: int | None = None,
    workers: int = 1,
    skip_empty: bool = True,
    drop_duplicates: bool = False,
    desc: str = "",
    progress: bool | None = None,
    tokenizer: str | None = None,
) -> tuple[dict, Counter]:
    """Measures (as :func:`custom_metrics.domain_measures`, identical values) and the
    token counts of one domain; chunks go to ``executor`` when given. ``tokenizer``:
    a name of :data:`custom_metrics.tokenize.TOKENIZERS` (``None``: the profile's).
    ``progress``: bar over pairs (``None``: as ``$DOMSUM_PROGRESS`` says, see
    :mod:`custom_metrics.progress`)."""
    from custom_metrics.progress import bar as progress_bar

    n = len(documents)
    dup = find_duplicates(documents, summaries)
    vocab_mask = ~(dup & drop_duplicates)
    if chunk_size is None:
        chunk_size = max(64, min(5000, math.ceil(n / max(1, 4 * workers))))
    tasks = [
        (k, documents[i : i + chunk_size], summaries[i : i + chunk_size],
         vocab_mask[i : i + chunk_size], profile, tokenizer)
        for k, i in enumerate(range(0, n, chunk_size))
    ]
    results: dict[int, tuple] = {}
    counts: Counter = Counter()
    bar = progress_bar(n, f"{desc or 'pairs'}: measures", unit="pair", enabled=progress,
                       leave=False)
    mapped = executor.map(_work, tasks) if executor is not None else map(_work, tasks)
    for index, cols, c in mapped:
        results[index] = cols
        counts.update(c)
        bar.update(len(cols["doc_length"]))
    bar.close()
    if results:
        parts = [results[k] for k in sorted(results)]
        cols = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    else:
        cols = {name: np.zeros(0) for name in PAIR_FIELDS}
        cols.update(doc_length=np.zeros(0, np.int64), summary_length=np.zeros(0, np.int64),
                    non_ascii=np.zeros(0, bool))
    stats = summarize_pairs(cols, profile, dup, skip_empty, drop_duplicates)
    return stats, counts


# ------------------------------------------------------------------ data


def default_subsets(benchmark: str) -> list[str]:
    """Every subset of ``benchmark`` in the catalogue."""
    try:
        return list(catalog.subsets(benchmark))
    except catalog.UnknownTask as exc:
        raise SystemExit(str(exc)) from None


def load_pairs(benchmark: str, subset: str, splits: Sequence[str], data_dir,
               max_docs: int | None) -> tuple[list[str], list[str]]:
    from lm_eval_tasks.data.loader import load_split

    docs: list[str] = []
    sums: list[str] = []
    for split in splits:
        for rec in load_split(benchmark, subset, split, data_dir=data_dir):
            docs.append(rec["document"])
            sums.append(rec["summary"])
            if max_docs is not None and len(docs) >= max_docs:
                return docs, sums
    return docs, sums


def synthetic_corpus(n: int, length: str, pool: int, seed: int = 0) -> tuple[list, list]:
    """``n`` pairs cycling through ``pool`` distinct synthetic pairs."""
    from custom_metrics.analysis.synthetic import LENGTHS, synthetic_pairs

    doc_len, sum_len = LENGTHS[length]
    docs, sums = synthetic_pairs(min(n, pool), doc_len, sum_len, seed)
    reps = itertools.islice(itertools.cycle(range(len(docs))), n)
    idx = list(reps)
    return [docs[i] for i in idx], [sums[i] for i in idx]


# ------------------------------------------------------------------ output

ROW_KEYS = (
    "doc_length", "doc_length_std", "summary_length", "summary_length_std",
    "compression", "density", "coverage", "doc_diversity", "summary_diversity",
    "abstractiveness", "novel_1gram", "novel_2gram",
    "n_pairs", "n_used", "n_skipped", *(f"skipped_{r}" for r in SKIP_REASONS),
    "n_duplicate", "n_doc_shorter_than_summary", "n_non_ascii", "seconds",
)


def _num(x, digits: int) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def table_markdown(rows: list[dict], profile: str, splits: Sequence[str],
                   tokenizer: str | None = None) -> str:
    head = ("| Level | Domain | Pairs | Doc length | Summary length | Compression | Density "
            "| Coverage | Doc diversity | Summary diversity | Abstractiveness |")
    lines = [
        f"Domain characteristics (profile `{profile}`, "
        f"tokenizer `{tokenizer or PROFILE_TOKENIZERS[profile]}`, splits {', '.join(splits)}; lengths "
        "in tokens, mean ± std; the other columns are means over pairs).",
        "",
        head,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['level']} | {r['domain']} | {r['n_used']} "
            f"| {_num(r['doc_length'], 2)} ± {_num(r['doc_length_std'], 2)} "
            f"| {_num(r['summary_length'], 2)} ± {_num(r['summary_length_std'], 2)} "
            f"| {_num(r['compression'], 4)} | {_num(r['density'], 4)} "
            f"| {_num(r['coverage'], 4)} | {_num(r['doc_diversity'], 4)} "
            f"| {_num(r['summary_diversity'], 4)} | {_num(r['abstractiveness'], 4)} |"
        )
    notes = []
    for r in rows:
        bits = [f"{r[f'skipped_{x}']} {x.replace('_', ' ')}" for x in SKIP_REASONS
                if r[f"skipped_{x}"]]
        flags = [f"{r[k]} {label}" for k, label in (
            ("n_duplicate", "duplicated"),
            ("n_doc_shorter_than_summary", "with document shorter than summary"),
            ("n_non_ascii", "with non-ASCII text")) if r[k]]
        if bits or flags:
            text = f"- {r['domain']}: {r['n_pairs']} pairs"
            if bits:
                text += "; skipped " + ", ".join(bits)
            if flags:
                text += "; " + ", ".join(flags)
            notes.append(text)
    if notes:
        lines += ["", "Data notes:", *notes]
    return "\n".join(lines) + "\n"


def overlap_markdown(group: str, labels: list[str], matrix: list[list[float]]) -> str:
    lines = [f"Vocabulary overlap (%), {group}:", "",
             "| | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for name, row in zip(labels, matrix):
        lines.append(f"| {name} | " + " | ".join(_num(v, 1) for v in row) + " |")
    return "\n".join(lines) + "\n"


def overlaps_by_group(vocabs: dict[str, dict[str, list[str]]],
                      notes: list[str]) -> dict[str, dict]:
    """Overlap matrix of every group with at least 2 domains (``group -> {"domains",
    "sizes", "matrix"}``); a group with fewer gets a line in ``notes`` instead, because
    a domain's overlap with itself is 100 % by construction and says nothing."""
    overlaps = {}
    for group, vs in vocabs.items():
        names = list(vs)
        if len(names) < 2:
            notes.append(f"vocabulary overlap of {group} not computed: it compares at least "
                         f"2 domains; the group has {len(names)} ({', '.join(names)})")
            continue
        overlaps[group] = {"domains": names, "sizes": [len(vs[n]) for n in names],
                           "matrix": overlap_matrix([vs[n] for n in names])}
    return overlaps


def group_title(group: str) -> str:
    """A group as figure titles name it: ``Genre`` for a level, a benchmark as spelled."""
    return group.capitalize() if group in LEVELS else group


def draw_figures(out: Path, rows: list[dict], overlaps: dict, meta: dict,
                 notes: list[str]) -> list[Path]:
    """Radar chart and overlap heat map of every group where they mean something;
    a figure that is not drawn gets its reason in ``notes`` (never an empty PNG)."""
    from custom_metrics.analysis import plots as _plots

    written = []
    by_group: dict[str, list[dict]] = {}
    for r in rows:
        by_group.setdefault(r["group"], []).append(r)
    for group, members in by_group.items():
        usable = [r for r in members if r["n_used"] > 0]
        unusable = [r["domain"] for r in members if r["n_used"] == 0]
        series = {r["domain"]: [r[m] for m in MEASURES] for r in usable}
        try:
            written.append(_plots.radar_chart(
                out / f"radar_{group}.png",
                f"{group_title(group)}: domain characteristics ({meta['profile']} profile)\n"
                "each axis scaled by its maximum over the domains",
                [MEASURE_LABELS[m] for m in MEASURES], series))
        except _plots.NothingToPlot as exc:
            hint = ("--group-by none keeps the selected domains in one group"
                    if meta.get("group_by") == "level" and len(rows) > 1
                    else "select 2 or more domains to compare")
            notes.append(f"radar_{group}.png not drawn: {exc}"
                         + (f"; no usable pairs in {', '.join(unusable)}" if unusable else "")
                         + f" ({hint})")
    for group, ov in overlaps.items():
        # the diagonal is found by equal row and column names, so the sizes go in the title
        short = [f"{d} {n:,}" for d, n in zip(ov["domains"], ov["sizes"]) if n < meta["vocab_size"]]
        try:
            written.append(_plots.heatmap(
                out / f"vocab_overlap_{group}.png",
                f"{group_title(group)}: vocabulary overlap (%)\n"
                f"top {meta['vocab_size']:,} non-stopword words per domain"
                + (f"\n(fewer words in: {', '.join(short)})" if short else ""),
                ov["domains"], ov["matrix"], mask_diagonal=True,
                value_label="overlap (% of the smaller vocabulary)"))
        except _plots.NothingToPlot as exc:
            notes.append(f"vocab_overlap_{group}.png not drawn: {exc}")
    return written


def write_outputs(out: Path, rows: list[dict], overlaps: dict, meta: dict,
                  plots: bool, notes: list[str] | None = None) -> list[Path]:
    """Table 5 (CSV, JSON, Markdown), overlap CSVs and, with ``plots``, the figures.

    ``notes`` (e.g. groups without an overlap matrix) are extended with the figures
    not drawn and their reasons, and end ``domain_stats.md`` and the JSON."""
    notes = notes if notes is not None else []
    out.mkdir(parents=True, exist_ok=True)
    written = draw_figures(out, rows, overlaps, meta, notes) if plots else []
    keys = ["level", "group", "domain", "benchmark", "splits", "profile", *ROW_KEYS]
    with open(out / "domain_stats.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if isinstance(r.get(k), float) and not math.isfinite(r[k])
                            else r.get(k)) for k in keys})
    written.append(out / "domain_stats.csv")
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r["domain"])
    payload = {**meta, "groups": groups, "domains": {r["domain"]: r for r in rows},
               "vocab_overlap": overlaps, "notes": notes}
    (out / "domain_stats.json").write_text(
        json.dumps(json_safe(payload), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written.append(out / "domain_stats.json")
    md = table_markdown(rows, meta["profile"], meta["splits"], meta.get("tokenizer"))
    for group, ov in overlaps.items():
        md += "\n" + overlap_markdown(group, ov["domains"], ov["matrix"])
    if notes:
        md += "\nFigure and overlap notes:\n" + "".join(f"- {n}\n" for n in notes)
    (out / "domain_stats.md").write_text(md, encoding="utf-8")
    written.append(out / "domain_stats.md")

    for group, ov in overlaps.items():
        with open(out / f"vocab_overlap_{group}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["domain", *ov["domains"]])
            for name, row in zip(ov["domains"], ov["matrix"]):
                w.writerow([name, *(f"{v:.2f}" if math.isfinite(v) else "" for v in row)])
        written.append(out / f"vocab_overlap_{group}.csv")
    return written


# ------------------------------------------------------------------ main

GROUP_BY = ("level", "none")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="domsum domain-stats",
        description="Per-domain corpus statistics (DomainSum Table 5, Figures 3 and 4).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--benchmark", default="domainsum", choices=catalog.BENCHMARKS, help="suite benchmark")
    sel = ap.add_mutually_exclusive_group()
    sel.add_argument("--subsets", "--subset", dest="subsets", help="comma-separated subsets (domains)")
    sel.add_argument("--level", choices=[*LEVELS, "all"],
                     help="a DomainSum level (or all three)")
    ap.add_argument("--group-by", "--group_by", dest="group_by", choices=GROUP_BY,
                    help="level: a radar and an overlap map per DomainSum level; none: the "
                         "selected domains together (default: none with --subsets, else level)")
    ap.add_argument("--splits", default="test", help="comma-separated splits, pooled")
    ap.add_argument("--data-dir", "--data_dir", dest="data_dir", help="local mirror (default: $DOMSUM_DATA_DIR, else hub)")
    ap.add_argument("--out", type=Path, default=Path("out/domain_stats"), help="output folder")
    ap.add_argument("--profile", choices=PROFILES, default="domainsum")
    ap.add_argument("--tokenizer", choices=sorted(TOKENIZERS),
                    help="word tokenizer (default: the profile's: "
                         + ", ".join(f"{p} -> {t}" for p, t in PROFILE_TOKENIZERS.items())
                         + "; spacy = SummEval data_stats / HELM)")
    ap.add_argument("--max-docs", "--max_docs", dest="max_docs", type=int,
                    help="at most this many pairs per domain")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes (1 = in this process)")
    ap.add_argument("--chunk-size", "--chunk_size", dest="chunk_size", type=int,
                    help="pairs per task (default: adaptive)")
    ap.add_argument("--vocab-size", "--vocab_size", dest="vocab_size", type=int, default=10_000)
    ap.add_argument("--drop-duplicates", "--drop_duplicates", dest="drop_duplicates",
                    action="store_true",
                    help="leave repeated (document, summary) pairs out (always counted)")
    ap.add_argument("--keep-empty", "--keep_empty", dest="keep_empty", action="store_true",
                    help="keep pairs with an empty document or summary (the release's "
                         "zero conventions) instead of skipping them")
    ap.add_argument("--no-plots", "--no_plots", dest="no_plots", action="store_true",
                    help="tables only, no radar charts or heat maps")
    ap.add_argument("--no-progress", "--no_progress", dest="no_progress", action="store_true",
                    help="no progress bars (default: as $DOMSUM_PROGRESS says, on)")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress bars and no per-domain timing lines")
    ap.add_argument("--synthetic", type=int, metavar="N",
                    help="time the pipeline on N synthetic pairs instead of data "
                         "(287113 = CNN/DailyMail train)")
    ap.add_argument("--synthetic-length", "--synthetic_length", dest="synthetic_length",
                    choices=("news", "long"), default="news")
    ap.add_argument("--synthetic-pool", "--synthetic_pool", dest="synthetic_pool", type=int,
                    default=10_000, help="distinct synthetic pairs, cycled up to N")
    args = ap.parse_args(argv)
    args.data_dir = resolve({"data_dir": args.data_dir}, "data_dir")
    for name in ("max_docs", "workers", "chunk_size", "vocab_size", "synthetic"):
        v = getattr(args, name)
        if v is not None and v < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.group_by is None:
        args.group_by = "none" if args.subsets else "level"
    return args


def select(args) -> list[tuple[str, str]]:
    """(group, subset) pairs to analyse, in the order given (``--subsets``) or the
    catalogue's; the group is the subset's level (``--group-by level``) or the
    benchmark (``--group-by none``: the selection stays together)."""
    if args.level:
        if args.benchmark != "domainsum":
            raise SystemExit("--level applies to --benchmark domainsum only")
        levels = list(LEVELS) if args.level == "all" else [args.level]
        subsets = [d for lvl in levels for d in LEVELS[lvl]]
    else:
        subsets = ([s.strip() for s in args.subsets.split(",") if s.strip()]
                   if args.subsets else default_subsets(args.benchmark))
        subsets = list(dict.fromkeys(subsets))  # each once, in the order given
        if not subsets:
            raise SystemExit(f"no subsets found for benchmark {args.benchmark!r}")
        known = default_subsets(args.benchmark)
        for s in subsets:
            if s not in known:
                name = "DomainSum domain" if args.benchmark == "domainsum" else f"{args.benchmark} subset"
                raise SystemExit(f"unknown {name} {s!r}; known: {', '.join(known)}")
    if args.group_by == "none":
        return [(args.benchmark, s) for s in subsets]
    return [(level_of(args.benchmark, s), s) for s in subsets]


def level_of(benchmark: str, subset: str) -> str:
    """The subset's DomainSum level, or the benchmark for the other benchmarks."""
    return catalog.level_of(benchmark, subset) or benchmark


def main(argv: list[str] | None = None) -> int:
    from custom_metrics.progress import bar as progress_bar

    args = parse_args(argv)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    stop, stop_source = stopwords()
    if args.synthetic:
        targets = [("synthetic", f"synthetic_{args.synthetic_length}")]
        splits = ["synthetic"]
    else:
        targets = select(args)
    progress = False if (args.no_progress or args.quiet) else None
    tokenizer = args.tokenizer or PROFILE_TOKENIZERS[args.profile]
    meta = {"benchmark": "synthetic" if args.synthetic else args.benchmark,
            "profile": args.profile, "tokenizer": tokenizer,
            "tokenizer_info": tokenizer_info(tokenizer),
            "splits": splits, "max_docs": args.max_docs,
            "vocab_size": args.vocab_size, "stopwords": stop_source,
            "workers": args.workers, "skip_empty": not args.keep_empty,
            "drop_duplicates": args.drop_duplicates,
            "group_by": "none" if args.synthetic else args.group_by}

    rows: list[dict] = []
    vocabs: dict[str, dict[str, list[str]]] = {}
    executor = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    t_all = time.perf_counter()
    domains_bar = progress_bar(len(targets), "domains", unit="domain", enabled=progress,
                               min_total=2)
    try:
        for group, subset in targets:
            domains_bar.set_postfix_str(f"{subset}: loading")
            if args.synthetic:
                t0 = time.perf_counter()
                docs, sums = synthetic_corpus(args.synthetic, args.synthetic_length,
                                              args.synthetic_pool)
                meta["synthetic_generation_seconds"] = time.perf_counter() - t0
                meta["synthetic_note"] = (
                    f"{args.synthetic} pairs cycling through {min(args.synthetic, args.synthetic_pool)} "
                    "distinct synthetic pairs (so n_duplicate counts the repeats); every "
                    "pair is tokenized and measured in full")
            else:
                from lm_eval_tasks.data.loader import DataError

                try:
                    docs, sums = load_pairs(args.benchmark, subset, splits, args.data_dir,
                                            args.max_docs)
                except DataError as exc:
                    print(f"error: {exc}", file=sys.stderr)
                    return 2
            t0 = time.perf_counter()
            domains_bar.set_postfix_str(f"{subset}: measures")
            stats, counts = analyse_pairs(
                docs, sums, args.profile, executor, args.chunk_size, args.workers,
                skip_empty=not args.keep_empty, drop_duplicates=args.drop_duplicates,
                desc=subset, progress=progress, tokenizer=tokenizer)
            domains_bar.set_postfix_str(f"{subset}: vocabulary")
            vocab = domain_vocabulary(counts, args.vocab_size, stop)
            seconds = time.perf_counter() - t0
            level = "synthetic" if args.synthetic else level_of(args.benchmark, subset)
            rows.append({"level": level, "group": group, "domain": subset,
                         "benchmark": meta["benchmark"], "splits": "+".join(splits), **stats,
                         "vocab_types": len(vocab), "seconds": seconds})
            vocabs.setdefault(group, {})[subset] = vocab
            domains_bar.update(1)
            if not args.quiet:
                domains_bar.write(f"{subset}: {stats['n_used']}/{stats['n_pairs']} pairs in "
                                  f"{seconds:.1f} s", file=sys.stderr)
    finally:
        domains_bar.close()
        if executor is not None:
            executor.shutdown()
    notes: list[str] = []
    overlaps = overlaps_by_group(vocabs, notes) if not args.synthetic else {}
    meta["seconds_total"] = time.perf_counter() - t_all
    written = write_outputs(args.out, rows, overlaps, meta,
                            plots=not (args.no_plots or args.synthetic), notes=notes)
    print(table_markdown(rows, args.profile, splits, tokenizer))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.synthetic:
        r = rows[0]
        print(f"synthetic: {r['n_pairs']:,} {args.synthetic_length}-length pairs measured "
              f"(tokenize + all measures + vocabulary) in {r['seconds']:.1f} s with "
              f"{args.workers} worker(s): {r['n_pairs'] / r['seconds']:,.0f} pairs/s")
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0
