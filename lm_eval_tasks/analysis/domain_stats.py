"""Corpus statistics per domain (DomainSum Table 5, Figures 3 and 4), as ``domsum domain-stats`` writes them.

For every selected subset (domain) of a suite benchmark, over the chosen splits
(pooled), it computes the eight characteristic measures of
:func:`custom_metrics.domain_measures` (profile ``domainsum``, the DomainSum
release's computation on ``nltk.word_tokenize(text.lower())`` tokens, or
``newsroom``, Grusky et al.'s as in SummEval's ``data_stats``, on lowercased spaCy
tokens; ``--tokenizer nltk|spacy|compat`` overrides the profile's tokenizer and the
one used is recorded with its versions in ``domain_stats.json``) and writes into
``--out``:

* ``domain_stats.csv`` / ``.json`` / ``.md``: Table 5 (one row per domain, with the
  pair counts and the reasons pairs were skipped); for a DomainSum domain, the paper's
  published Table 5 value of each measure beside the run's, cited, with the check of the
  run against the paper's protocol in words (``domain_stats.md``) and as a record
  (``published`` in the JSON: ``comparable``, ``differences`` [{field, run, paper}]):
  :func:`published_beside`;
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

Why in the suite's library (the command parses flags and calls :func:`run_domain_stats`):
the selection reads the task catalogue and the data the mirror or the hub; the
measures, vocabularies and overlaps themselves are :mod:`custom_metrics.analysis.domains`.

Examples::

    domsum domain-stats --level genre --data-dir lm_eval_tasks/sample_data --out out/stats
    domsum domain-stats --subsets cnndm,pubmed --splits train,test --max-docs 1000
    domsum domain-stats --subsets cnndm,cnn,soccer --group-by level
    domsum domain-stats --benchmark adapteval --profile newsroom
    domsum domain-stats --level genre --profile newsroom --tokenizer nltk
    domsum domain-stats --synthetic 287113 --workers 2 --out out/synthetic
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from custom_metrics.cells import markdown_table, write_csv
from custom_metrics.errors import SuiteError
from custom_metrics.analysis.domains import analyse_pairs, domain_vocabulary, overlap_matrix, stopwords
from custom_metrics.analysis.measures import MEASURES, PROFILE_TOKENIZERS, SKIP_REASONS
from custom_metrics.registry import json_safe
from custom_metrics.tokenize import tokenizer_info
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS, RECORDS

#: the benchmark whose paper publishes these statistics per domain (DomainSum Table 5,
#: ``report.statistics_table``): the default selection, whose levels ``--level`` names,
#: and whose release's measure profile is the default
PAPER = next(r for r in RECORDS.values() if r.report.statistics_table)
#: the profile of :mod:`custom_metrics.analysis.measures` used unless another is asked for
DEFAULT_PROFILE: str = PAPER.report.measure_profile
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


# ------------------------------------------------------------------ selection and data


class SelectionError(SuiteError, ValueError):
    """A selection of domains the catalogue does not have."""


def default_subsets(benchmark: str) -> list[str]:
    """Every subset of ``benchmark`` in the catalogue."""
    try:
        return list(catalog.subsets(benchmark))
    except catalog.UnknownTask as exc:
        raise SelectionError(str(exc)) from None


def select(benchmark: str, level: str | None = None, subsets: str | None = None,
           group_by: str = "level") -> list[tuple[str, str]]:
    """(group, subset) pairs to analyse, in the order given (``subsets``, comma-separated)
    or the catalogue's; the group is the subset's level (``group_by`` ``level``) or the
    benchmark (``none``: the selection stays together). ``level``: a DomainSum level or
    ``all``."""
    if level:
        if benchmark != PAPER.name:
            raise SelectionError(f"--level applies to --benchmark {PAPER.name} only")
        levels = list(LEVELS) if level == "all" else [level]
        chosen = [d for lvl in levels for d in LEVELS[lvl]]
    else:
        chosen = ([s.strip() for s in subsets.split(",") if s.strip()]
                  if subsets else default_subsets(benchmark))
        chosen = list(dict.fromkeys(chosen))  # each once, in the order given
        if not chosen:
            raise SelectionError(f"no subsets found for benchmark {benchmark!r}")
        known = default_subsets(benchmark)
        for s in chosen:
            if s not in known:
                name = f"{PAPER.title} domain" if benchmark == PAPER.name else f"{benchmark} subset"
                raise SelectionError(f"unknown {name} {s!r}; known: {', '.join(known)}")
    if group_by == "none":
        return [(benchmark, s) for s in chosen]
    return [(level_of(benchmark, s), s) for s in chosen]


def level_of(benchmark: str, subset: str) -> str:
    """The subset's DomainSum level, or the benchmark for the other benchmarks."""
    return catalog.level_of(benchmark, subset) or benchmark


def load_pairs(benchmark: str, subset: str, splits: Sequence[str], data_dir,
               max_docs: int | None) -> tuple[list[str], list[str]]:
    """Documents and summaries of ``splits`` (pooled, in order), at most ``max_docs`` pairs."""
    from lm_eval_tasks.benchmarks.sources import load_split

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
    header = ["Level", "Domain", "Pairs", "Doc length", "Summary length", "Compression", "Density", "Coverage",
              "Doc diversity", "Summary diversity", "Abstractiveness"]
    table = markdown_table(header, [
        [r["level"], r["domain"], r["n_used"], f"{_num(r['doc_length'], 2)} ± {_num(r['doc_length_std'], 2)}",
         f"{_num(r['summary_length'], 2)} ± {_num(r['summary_length_std'], 2)}", _num(r["compression"], 4),
         _num(r["density"], 4), _num(r["coverage"], 4), _num(r["doc_diversity"], 4),
         _num(r["summary_diversity"], 4), _num(r["abstractiveness"], 4)] for r in rows],
        ["---", "---"] + ["---:"] * 9)
    lines = [
        f"Domain characteristics (profile `{profile}`, "
        f"tokenizer `{tokenizer or PROFILE_TOKENIZERS[profile]}`, splits {', '.join(splits)}; lengths "
        "in tokens, mean ± std; the other columns are means over pairs).",
        "",
        *table.splitlines(),
    ]
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
    return (f"Vocabulary overlap (%), {group}:\n\n"
            + markdown_table(["", *labels], [[name, *(_num(v, 1) for v in row)] for name, row in zip(labels, matrix)]))


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
                  plots: bool, notes: list[str] | None = None, published: list[dict] | None = None) -> list[Path]:
    """Table 5 (CSV, JSON, Markdown), overlap CSVs and, with ``plots``, the figures.

    ``notes`` (e.g. groups without an overlap matrix) are extended with the figures
    not drawn and their reasons, and end ``domain_stats.md`` and the JSON; ``published``
    (:func:`published_beside`) is the JSON's ``published`` and a section of the Markdown."""
    published = published or []
    notes = notes if notes is not None else []
    out.mkdir(parents=True, exist_ok=True)
    written = draw_figures(out, rows, overlaps, meta, notes) if plots else []
    keys = ["level", "group", "domain", "benchmark", "splits", "profile", *ROW_KEYS]
    write_csv(out / "domain_stats.csv", keys, ([("" if isinstance(r.get(k), float) and not math.isfinite(r[k])
                                                  else r.get(k)) for k in keys] for r in rows))
    written.append(out / "domain_stats.csv")
    groups: dict[str, list[str]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r["domain"])
    payload = {**meta, "groups": groups, "domains": {r["domain"]: r for r in rows},
               "vocab_overlap": overlaps, "published": published, "notes": notes}
    (out / "domain_stats.json").write_text(
        json.dumps(json_safe(payload), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written.append(out / "domain_stats.json")
    md = table_markdown(rows, meta["profile"], meta["splits"], meta.get("tokenizer"))
    md += published_markdown(published)
    for group, ov in overlaps.items():
        md += "\n" + overlap_markdown(group, ov["domains"], ov["matrix"])
    if notes:
        md += "\nFigure and overlap notes:\n" + "".join(f"- {n}\n" for n in notes)
    (out / "domain_stats.md").write_text(md, encoding="utf-8")
    written.append(out / "domain_stats.md")

    for group, ov in overlaps.items():
        write_csv(out / f"vocab_overlap_{group}.csv", ["domain", *ov["domains"]],
                  ([name, *(f"{v:.2f}" if math.isfinite(v) else "" for v in row)]
                   for name, row in zip(ov["domains"], ov["matrix"])))
        written.append(out / f"vocab_overlap_{group}.csv")
    return written


# ------------------------------------------------------------------ beside the paper

def published_beside(rows: list[dict], meta: dict) -> list[dict]:
    """DomainSum Table 5's published value of every measured DomainSum domain and measure,
    beside the user's (on the paper's scale: x100 for the percentages), each with its
    citation and the check of how the user's corpus was measured against the paper's
    protocol (:func:`lm_eval_tasks.published.beside.beside`): the pairs measured and their
    split (the paper states neither), the tokenizer (the paper names none) and the
    measures' definitions (the ``domainsum`` profile is the paper's; ``newsroom`` is
    Grusky et al.'s). Empty for a benchmark whose record declares no published table of
    these statistics (``report.statistics_table``): its domains are not a paper's."""
    from lm_eval_tasks import published
    from lm_eval_tasks.published import beside, protocol

    record = ALL_RECORDS.get(meta["benchmark"])
    table = record.report.statistics_table if record is not None else None
    paper = published.load(record.name) if table else None
    if paper is None:
        return []
    profile, theirs = meta["profile"], record.report.measure_profile
    definitions = protocol.Field("measure definitions", f"{profile} profile",
                                 f"the {record.title} release's (profile {theirs})", profile == theirs)
    out = []
    for r in rows:
        facts = protocol.RunFacts(label=f"{r['domain']} ({r['splits']})", setting="dataset statistics",
                                  subset=r["domain"], documents=r["n_used"], split=r["splits"].replace("+", ", "),
                                  stated={"tokenizer": meta["tokenizer"]})
        for v in paper.find(table=table, subset=r["domain"]):
            x = r.get(v["measure"])
            mine = x * paper.scale(v["metric"]) if isinstance(x, (int, float)) and math.isfinite(x) else None
            out.append(beside.beside(paper, v, mine, facts, f"{r['domain']} {v['column']}", [definitions]))
    return out


def _where(published: list[dict]) -> str:
    """The paper and table the :func:`published_beside` records come from (``DomainSum Table 5``)."""
    return f"{published[0]['paper']} {published[0]['table']}"


def published_markdown(published: list[dict]) -> str:
    """The section of ``domain_stats.md`` that shows :func:`published_beside`."""
    from lm_eval_tasks.published.beside import beside_markdown

    if not published:
        return ""
    return (f"\nBeside the paper's published statistics ({_where(published)}), this run's on the paper's scale "
            "(lengths in tokens, compression a ratio, the other measures x100):\n\n"
            + beside_markdown(published))


# ------------------------------------------------------------------ run

GROUP_BY = ("level", "none")


def run_domain_stats(targets: list[tuple[str, str]], out: Path, *, benchmark: str = PAPER.name,
                     splits: Sequence[str] = ("test",), data_dir: str | None = None, profile: str = DEFAULT_PROFILE,
                     tokenizer: str | None = None, max_docs: int | None = None, workers: int = 1,
                     chunk_size: int | None = None, vocab_size: int = 10_000, drop_duplicates: bool = False,
                     keep_empty: bool = False, plots: bool = True, progress: bool | None = None,
                     quiet: bool = False, group_by: str = "level", synthetic: int | None = None,
                     synthetic_length: str = "news", synthetic_pool: int = 10_000) -> dict:
    """Measure every (group, subset) of ``targets`` (or ``synthetic`` generated pairs), write
    Table 5, the overlaps and the figures into ``out``; return ``{"rows", "notes", "written",
    "meta"}``. A per-domain timing line goes to stderr unless ``quiet``. Missing or bad data
    raises :class:`lm_eval_tasks.data.loader.DataError`."""
    from custom_metrics.progress import bar as progress_bar

    stop, stop_source = stopwords()
    if synthetic:
        targets = [("synthetic", f"synthetic_{synthetic_length}")]
        splits = ["synthetic"]
    splits = list(splits)
    tokenizer = tokenizer or PROFILE_TOKENIZERS[profile]
    meta = {"benchmark": "synthetic" if synthetic else benchmark,
            "profile": profile, "tokenizer": tokenizer,
            "tokenizer_info": tokenizer_info(tokenizer),
            "splits": splits, "max_docs": max_docs,
            "vocab_size": vocab_size, "stopwords": stop_source,
            "workers": workers, "skip_empty": not keep_empty,
            "drop_duplicates": drop_duplicates,
            "group_by": "none" if synthetic else group_by}

    rows: list[dict] = []
    vocabs: dict[str, dict[str, list[str]]] = {}
    executor = ProcessPoolExecutor(workers) if workers > 1 else None
    t_all = time.perf_counter()
    domains_bar = progress_bar(len(targets), "domains", unit="domain", enabled=progress,
                               min_total=2)
    try:
        for group, subset in targets:
            domains_bar.set_postfix_str(f"{subset}: loading")
            if synthetic:
                t0 = time.perf_counter()
                docs, sums = synthetic_corpus(synthetic, synthetic_length, synthetic_pool)
                meta["synthetic_generation_seconds"] = time.perf_counter() - t0
                meta["synthetic_note"] = (
                    f"{synthetic} pairs cycling through {min(synthetic, synthetic_pool)} "
                    "distinct synthetic pairs (so n_duplicate counts the repeats); every "
                    "pair is tokenized and measured in full")
            else:
                docs, sums = load_pairs(benchmark, subset, splits, data_dir, max_docs)
            t0 = time.perf_counter()
            domains_bar.set_postfix_str(f"{subset}: measures")
            stats, counts = analyse_pairs(
                docs, sums, profile, executor, chunk_size, workers,
                skip_empty=not keep_empty, drop_duplicates=drop_duplicates,
                desc=subset, progress=progress, tokenizer=tokenizer)
            domains_bar.set_postfix_str(f"{subset}: vocabulary")
            vocab = domain_vocabulary(counts, vocab_size, stop)
            seconds = time.perf_counter() - t0
            level = "synthetic" if synthetic else level_of(benchmark, subset)
            rows.append({"level": level, "group": group, "domain": subset,
                         "benchmark": meta["benchmark"], "splits": "+".join(splits), **stats,
                         "vocab_types": len(vocab), "seconds": seconds})
            vocabs.setdefault(group, {})[subset] = vocab
            domains_bar.update(1)
            if not quiet:
                domains_bar.write(f"{subset}: {stats['n_used']}/{stats['n_pairs']} pairs in "
                                  f"{seconds:.1f} s", file=sys.stderr)
    finally:
        domains_bar.close()
        if executor is not None:
            executor.shutdown()
    notes: list[str] = []
    overlaps = overlaps_by_group(vocabs, notes) if not synthetic else {}
    meta["seconds_total"] = time.perf_counter() - t_all
    published = published_beside(rows, meta)
    written = write_outputs(out, rows, overlaps, meta, plots=plots and not synthetic, notes=notes,
                            published=published)
    return {"rows": rows, "notes": notes, "written": written, "meta": meta, "published": published}


def print_account(done: dict, synthetic_length: str = "news") -> None:
    """What ``domsum domain-stats`` shows of a :func:`run_domain_stats` result: Table 5 on
    stdout; notes and the files written on stderr; a synthetic run's throughput."""
    rows, meta = done["rows"], done["meta"]
    print(table_markdown(rows, meta["profile"], meta["splits"], meta["tokenizer"]))
    for note in done["notes"]:
        print(f"note: {note}", file=sys.stderr)
    if meta["benchmark"] == "synthetic":
        r = rows[0]
        print(f"synthetic: {r['n_pairs']:,} {synthetic_length}-length pairs measured "
              f"(tokenize + all measures + vocabulary) in {r['seconds']:.1f} s with "
              f"{meta['workers']} worker(s): {r['n_pairs'] / r['seconds']:,.0f} pairs/s")
    if done.get("published"):
        same = sum(r["comparable"] for r in done["published"])
        print(f"beside {_where(done['published'])}: {len(done['published'])} published values, {same} of the same "
              "protocol (domain_stats.md, and 'published' in domain_stats.json)", file=sys.stderr)
    print("wrote " + ", ".join(str(p) for p in done["written"]), file=sys.stderr)
