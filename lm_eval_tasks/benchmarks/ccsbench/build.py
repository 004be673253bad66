"""CCSBench glue: loading with control-column recognition, the prompts, the metrics.

Paper: Ding et al., "CCSBench: Evaluating Compositional Controllability in LLMs for
Scientific Document Summarization" (arXiv 2410.12601). Data: hub dataset
``dyxohjl666/CCSBench`` (CSV files; subsets length, keywords, readability, focus,
compositional) or the mirror ``DIR/ccsbench/<subset>/<split>.jsonl``.

Controls and their canonical values (every record gets these fields):

* ``length_bin``: int 0.. (50-word bins), -1 when absent;
* ``keywords``: JSON string of a list of strings (a list, a JSON/Python list string or
  a ``;``/``|``/``,``-delimited string in the source);
* ``readability``: ``normal`` / ``high`` ("" when absent);
* ``focus``: ``high`` (empirical) / ``low`` (conceptual) ("" when absent).

Column names are recognised from :data:`ALIASES`; metadata ``column_map``
(``{"length": "my_col", ...}``) overrides. A subset whose required control column is
missing is an error listing the columns found. A row whose required control is empty
(None / "" / NaN) is skipped and counted (logged; ``skipped_rows`` in results); a
present but malformed value (``readability: "medium"``) is an error naming the row.

Full text (the ``_fulltext`` tasks, Section 7 and Table 7): the prompt's document is the
record's ``full_text`` field (spellings in :data:`ALIASES`, or metadata ``column_map``
``{"full_text": "COLUMN"}``) in place of the introduction + conclusion, cut to
:data:`~lm_eval_tasks.benchmarks.ccsbench.record.FULLTEXT_DOC_WORDS` words by default. A
split without such a column is one error line naming the task, the file (or hub split),
the spellings looked for and the fix; a row whose full text is empty is skipped and
counted like a row with an empty control. The I+C text is never used in its place.

Prompts: the paper's Appendix C.4 (zero-shot) and C.5 (three demonstrations), verbatim
(:mod:`lm_eval_tasks.benchmarks.ccsbench.prompts`). Every record carries the system
text in ``system`` and the user part in ``prompt``; the task YAML's ``description``
places ``system`` as a system message under a chat template and prepends it otherwise.
Metadata ``ccs_prompt_file`` replaces the texts without code changes; what was used is
recorded as ``ccs_prompt_source`` in the results metadata. The ``_hard`` variants use
Appendix A's ``Attribute: Value`` lines and no system text.
"""

from __future__ import annotations

import ast
import json
import logging
import math
from typing import Any

from custom_metrics.families.ccs import N_BINS
from lm_eval_tasks.benchmarks.ccsbench.prompts import DEFAULT as DEFAULT_SPEC
from lm_eval_tasks.benchmarks.ccsbench.record import CONTROLS, DOC_WORDS, FULLTEXT_DOC_WORDS
from lm_eval_tasks.benchmarks.ccsbench.prompts import PromptSpec, load_prompt_spec
from lm_eval_tasks.benchmarks.budget import word_budget
from lm_eval_tasks.data.loader import DataError, draw_demos, load_split, sampled_test, resolve_data_dir
from lm_eval_tasks.benchmarks.prompting import truncate
from lm_eval_tasks.settings import resolve

log = logging.getLogger(__name__)

HUB_PATH = "dyxohjl666/CCSBench"
REQUIRED = {**{c: (c,) for c in CONTROLS}, "compositional": CONTROLS}
ALIASES = {
    "document": ("document", "input", "source", "text", "article", "paper", "intro_conclusion"),
    "summary": ("summary", "abstract", "target", "output", "reference", "ref_abstract"),
    "length": ("length", "length_bin", "len_bin", "len", "length_control"),
    "keywords": ("keywords", "keyword", "keyword_list", "kw", "keywords_control"),
    "readability": ("readability", "readability_level", "read", "readability_control"),
    "focus": ("focus", "empirical_focus", "focus_level", "empirical", "focus_control"),
    # the whole paper, for the _fulltext tasks only (the hub release holds I+C text only)
    "full_text": ("full_text", "fulltext", "full_document", "paper_text", "body_text", "full_paper"),
}
READABILITY = {"normal": "normal", "high": "high", "low": "normal"}  # "low" readability = expert text
FOCUS = {"high": "high", "low": "low", "empirical": "high", "conceptual": "low"}
DEFAULT_SEED = 1234
DEFAULT_DEMO_WORDS = 300

DOC_MARKER = "Paper: "  # the _hard variants' layout
SUMMARY_CUE = "Summary:"
HARD_SOURCE = "CCSBench Appendix A hard prompt (Attribute: Value control lines)"
#: what the _fulltext tasks' results record as their input (``ccs_input``)
FULLTEXT_INPUT = "full document (field full_text), CCSBench Section 7"


# --------------------------------------------------------------------------- loading


def _empty(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def parse_keywords(value: Any, where: str = "") -> list[str]:
    """A list of keywords from a list, a JSON (or Python-literal) list string, or a
    ``;`` / ``|`` / ``,``-delimited string (first delimiter present, in that order)."""
    if _empty(value):
        return []
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        s = value.strip()
        if s.startswith("["):
            try:
                items = json.loads(s)
            except json.JSONDecodeError:
                try:
                    items = ast.literal_eval(s)
                except (ValueError, SyntaxError):
                    raise DataError(f"{where}: keywords {value!r} look like a list but do not parse") from None
            if not isinstance(items, list):
                raise DataError(f"{where}: keywords {value!r} are not a list")
        else:
            delim = next((d for d in (";", "|", ",") if d in s), None)
            items = s.split(delim) if delim else [s]
    else:
        raise DataError(f"{where}: keywords must be a list or a string, got {type(value).__name__}")
    out = []
    for k in items:
        if not isinstance(k, str):
            raise DataError(f"{where}: keyword {k!r} is not a string")
        if k.strip():
            out.append(k.strip())
    return out


def parse_length(value: Any, where: str) -> int:
    """The length bin of a cell: an integer 0-4 (CCSBench Section 3.1: five 50-word
    bins); anything else is an error naming ``where`` (task, file, row, field)."""
    try:
        f = float(str(value).strip().lower().removeprefix("bin").strip())
    except ValueError:
        raise DataError(f"{where}: length bin {value!r} is not an integer") from None
    if f != int(f) or f < 0:
        raise DataError(f"{where}: length bin {value!r} is not a non-negative integer")
    if f >= N_BINS:
        raise DataError(f"{where}: length bin {value!r} is outside CCSBench's bins 0-{N_BINS - 1} "
                        f"(five 50-word bins; bin 4 = 201-250 words)")
    return int(f)


def _label(value: Any, table: dict[str, str], what: str, where: str) -> str:
    v = str(value).strip().lower()
    if v not in table:
        raise DataError(f"{where}: {what} {value!r} is not one of {sorted(table)}")
    return table[v]


def resolve_columns(columns: list[str], subset: str, column_map: dict | None, where: str,
                    fulltext: bool = False) -> dict[str, str | None]:
    """Canonical field -> source column (None when absent); errors list the columns found.
    ``fulltext``: the document is the ``full_text`` column, which must exist."""
    cmap = dict(column_map or {})
    out: dict[str, str | None] = {}
    for field, aliases in ALIASES.items():
        if field in cmap:
            if cmap[field] not in columns:
                raise DataError(f"{where}: column_map maps {field!r} to {cmap[field]!r}, "
                                f"which is not a column; columns found: {sorted(columns)}")
            out[field] = cmap[field]
            continue
        lower = {c.lower(): c for c in columns}
        out[field] = next((lower[a] for a in aliases if a in lower), None)
    if fulltext and out["full_text"] is None:
        raise DataError(
            f"{where}: no full-text column for the full-document input (looked for {list(ALIASES['full_text'])}; "
            f"columns found: {sorted(columns)}); CCSBench's hub release holds only the introduction and "
            f"conclusion: add a 'full_text' field with each paper's whole text to the mirror's records, or map "
            f"your column with --metadata '{{\"column_map\": {{\"full_text\": \"COLUMN\"}}}}'")
    needed = ("full_text" if fulltext else "document", "summary", *REQUIRED[subset])
    missing = [f for f in needed if out[f] is None]
    if missing:
        raise DataError(
            f"{where}: no column for {missing}; columns found: {sorted(columns)}. Recognised "
            f"spellings: { {f: ALIASES[f] for f in missing} }. Map yours with metadata "
            f"column_map, e.g. --metadata '{{\"column_map\": {{\"{missing[0]}\": \"COLUMN\"}}}}'")
    return out


def normalize_records(rows: list[dict], subset: str, column_map: dict | None, where: str,
                      fulltext: bool = False) -> tuple[list[dict], int]:
    """Canonical records and the number of rows skipped for an empty required control (or,
    ``fulltext``, an empty full text: the record's ``document`` is then the full text)."""
    if not rows:
        return [], 0
    columns = sorted({c for r in rows for c in r})
    cols = resolve_columns(columns, subset, column_map, where, fulltext)
    source = cols["full_text" if fulltext else "document"]
    out, skipped = [], 0
    for i, r in enumerate(rows):
        w = f"{where}, row {i + 1}"
        doc, summ = r.get(source), r.get(cols["summary"])
        if fulltext and _empty(doc):
            skipped += 1
            continue
        if not isinstance(doc, str) or not isinstance(summ, str):
            raise DataError(f"{w}: {'field ' + repr(source) if fulltext else 'document'} and summary must be strings")
        raw = {c: (r.get(cols[c]) if cols[c] else None) for c in CONTROLS}
        if any(_empty(raw[c]) for c in REQUIRED[subset] if c != "keywords") or (
                "keywords" in REQUIRED[subset] and raw["keywords"] is None):
            skipped += 1
            continue
        rec = {"id": r.get("id", f"ccsbench/{subset}/{i}"), "document": doc, "summary": summ,
               "length_bin": -1 if _empty(raw["length"]) else parse_length(
                   raw["length"], f"{w}, field 'length' (column {cols['length']!r})"),
               "keywords": json.dumps(parse_keywords(raw["keywords"], w)),
               "readability": "" if _empty(raw["readability"]) else _label(raw["readability"], READABILITY, "readability", w),
               "focus": "" if _empty(raw["focus"]) else _label(raw["focus"], FOCUS, "focus", w)}
        out.append(rec)
    if skipped:
        log.warning("%s: skipped %d of %d rows with an empty required field %s",
                    where, skipped, len(rows), (*REQUIRED[subset], *(("full_text",) if fulltext else ())))
    return out, skipped


def _hub_rows(subset: str, split: str, task: str) -> list[dict]:
    """Rows of the hub dataset (CSV files; layout unverified offline: tries the subset
    as a config name, then as a ``data_dir``)."""
    from lm_eval_tasks.data.hub import OFFLINE_HINT, one_line, unreachable

    what = f"task {task!r}: {HUB_PATH} ({subset}, {split})"
    if (reason := unreachable(what)) is not None:
        raise DataError(reason)
    import datasets

    errors = []
    for kwargs in ({"name": subset}, {"data_dir": subset}):
        try:
            return list(datasets.load_dataset(HUB_PATH, split=split, **kwargs))
        except Exception as exc:  # network, layout
            errors.append(f"{kwargs}: {one_line(exc)}")
    raise DataError(f"could not load {what} from the hub ({'; '.join(errors)}); without internet, "
                    f"{OFFLINE_HINT} (the mirror holding ccsbench/{subset}/{split}.jsonl).")


def load_records(subset: str, split: str, metadata: dict, task: str,
                 skipped_rows: dict[str, int] | None = None, fulltext: bool = False) -> list[dict]:
    """Canonical, validated records of one split; skipped rows counted in ``skipped_rows``.
    ``fulltext``: each record's ``document`` is the row's full text (:func:`normalize_records`)."""
    data_dir = resolve(metadata, "data_dir")
    cmap = resolve(metadata, "column_map")
    if resolve_data_dir(data_dir) is not None:
        rows = load_split("ccsbench", subset, split, data_dir, task, required=())
        where = f"task {task!r}: {resolve_data_dir(data_dir)}/ccsbench/{subset}/{split}.jsonl"
    else:
        rows, where = _hub_rows(subset, split, task), f"task {task!r}: {HUB_PATH} {subset}/{split}"
    recs, skipped = normalize_records(rows, subset, cmap, where, fulltext)
    if skipped_rows is not None:
        skipped_rows[split] = skipped
    return recs


# --------------------------------------------------------------------------- prompts


def hard_lines(rec: dict) -> list[str]:
    """``Attribute: Value`` control lines, CCSBench Appendix A (hard prompt, after
    MACSum): attributes Length, Keywords, Readability, Focus; values capitalised as the
    appendix's examples ("Normal", "High"); Length's value is the bin, keywords are
    comma-separated (Appendix A fixes neither)."""
    out = []
    if rec.get("length_bin", -1) >= 0:
        out.append(f"Length: {rec['length_bin']}")
    kws = json.loads(rec.get("keywords") or "[]")
    if kws:
        out.append("Keywords: " + ", ".join(kws))
    if rec.get("readability"):
        out.append(f"Readability: {rec['readability'].capitalize()}")
    if rec.get("focus"):
        out.append(f"Focus: {rec['focus'].capitalize()}")
    return out


def build_prompt(rec: dict, demos: list[dict], budget: dict, demo_budget: dict,
                 spec: PromptSpec | None, where: str = "") -> str:
    """The user part of the prompt: ``spec``'s C.4 / C.5 layout, or (``spec`` None, the
    ``_hard`` variants) Appendix A lines, the document and the summary cue."""
    doc = truncate(rec["document"], **budget)
    if spec is None:
        def turn(d: dict, text: str) -> str:
            return "\n".join([*hard_lines(d), DOC_MARKER + text, SUMMARY_CUE])

        shown = [turn(d, truncate(d["document"], **demo_budget)) + " " + d["summary"].strip() for d in demos]
        return "\n\n".join([*shown, turn(rec, doc)])
    return spec.render(rec, doc, [(d, truncate(d["document"], **demo_budget)) for d in demos], where)


def resolve_prompt_spec(metadata: dict | None, task: str) -> PromptSpec:
    """The spec named by metadata ``ccs_prompt_file`` / ``DOMSUM_CCS_PROMPT_FILE``, else the paper's."""
    path = resolve(metadata, "ccs_prompt_file")
    return load_prompt_spec(path, task) if path else DEFAULT_SPEC


def build_docs(domain: str, shots: int, task: str, metadata: dict, split: str = "test", *,
               hard: bool = False, fulltext: bool = False) -> tuple[list[dict], dict]:
    """Records of ``split`` for subset ``domain`` with ``system`` and ``prompt``; plus load facts.

    ``system`` is the system text (CCSBench Appendix C.4/C.5 "# System"; "" for the
    ``hard`` variant, which uses Appendix A's ``Attribute: Value`` lines), ``prompt``
    the user part. Demonstrations
    (``shots`` > 0) come from ``train``, drawn per document with ``fewshot_seed``.
    ``fulltext``: the document is the paper's full text (:data:`FULLTEXT_DOC_WORDS` words by default).
    """
    spec = None if hard else resolve_prompt_spec(metadata, task)
    skipped_rows: dict[str, int] = {}
    docs = load_records(domain, split, metadata, task, skipped_rows, fulltext)
    docs = sampled_test(docs, metadata)
    budget = word_budget(metadata, "doc", FULLTEXT_DOC_WORDS if fulltext else DOC_WORDS[0 if shots == 0 else 3])
    demo_budget = word_budget(metadata, "demo", DEFAULT_DEMO_WORDS)
    pool: list[dict] = []
    if shots:
        pool = load_records(domain, "train", metadata, task, skipped_rows)
        if len(pool) < shots:
            raise DataError(f"task {task!r}: {len(pool)} usable train records; {shots} demonstrations needed")
    seed = resolve(metadata, "fewshot_seed", DEFAULT_SEED)
    for d in docs:
        demos = draw_demos(pool, d["id"], seed, shots) if shots else []
        d["system"] = "" if spec is None else spec.system
        d["prompt"] = build_prompt(d, demos, budget, demo_budget, spec, f"task {task!r}")
        d["demo_ids"] = json.dumps([x["id"] for x in demos])
    facts = {"skipped_rows": skipped_rows, "fewshot_seed_used": seed,
             "ccs_prompt_source": HARD_SOURCE if spec is None else spec.source}
    return docs, facts | ({"ccs_input": FULLTEXT_INPUT} if fulltext else {})


def stop_sequences(task: str, metadata: dict, *, hard: bool = False) -> tuple[str, ...] | None:
    """The prompt file's ``until`` when one replaces the built-in instruction prompt
    (the ``hard`` variant keeps its lines and the catalogue's stops); else None."""
    if hard:
        return None
    spec = resolve_prompt_spec(metadata, task)
    return None if spec.source == DEFAULT_SPEC.source else tuple(spec.until)


def family_options(task: str, family: str, metadata: dict) -> dict[str, Any]:
    """What a metric family needs from this benchmark's prompt: the focus judge's messages
    (the prompt file's C.3 text, if one is set) and their source for the results."""
    if family != "ccs_focus":
        return {}
    prompt = resolve_prompt_spec(metadata, task)
    return {"focus_messages": prompt.focus_messages, "focus_prompt_source": prompt.focus_source}
