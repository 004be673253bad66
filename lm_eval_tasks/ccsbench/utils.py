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

Prompts: the hub columns and the paper's Appendix C.3-C.5 prompt text could not be
checked offline; the built-in texts (:mod:`lm_eval_tasks.ccsbench.prompts`) are our
reconstruction (instruction, the row's control requirements, the paper, "Summary:"),
and metadata ``ccs_prompt_file`` replaces them with the paper's wording without code
changes. What was used is recorded as ``ccs_prompt_source`` in the results metadata.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import random
from typing import Any

from lm_eval_tasks.ccsbench.prompts import DEFAULT as DEFAULT_SPEC
from lm_eval_tasks.ccsbench.prompts import PromptSpec, resolve_prompt_spec
from lm_eval_tasks.common.data import DataError, load_split, report_load, resolve_data_dir
from lm_eval_tasks.common.prompts import truncate
from lm_eval_tasks.common.settings import int_setting, setting
from lm_eval_tasks.common.task import SummarizationTask

log = logging.getLogger(__name__)

HUB_PATH = "dyxohjl666/CCSBench"
SUBSETS = ("length", "keywords", "readability", "focus", "compositional")
CONTROLS = ("length", "keywords", "readability", "focus")
REQUIRED = {"length": ("length",), "keywords": ("keywords",), "readability": ("readability",),
            "focus": ("focus",), "compositional": CONTROLS}
ALIASES = {
    "document": ("document", "input", "source", "text", "article", "paper", "intro_conclusion"),
    "summary": ("summary", "abstract", "target", "output", "reference", "ref_abstract"),
    "length": ("length", "length_bin", "len_bin", "len", "length_control"),
    "keywords": ("keywords", "keyword", "keyword_list", "kw", "keywords_control"),
    "readability": ("readability", "readability_level", "read", "readability_control"),
    "focus": ("focus", "empirical_focus", "focus_level", "empirical", "focus_control"),
}
READABILITY = {"normal": "normal", "high": "high", "low": "normal"}  # "low" readability = expert text
FOCUS = {"high": "high", "low": "low", "empirical": "high", "conceptual": "low"}
DEFAULT_SEED = 1234
DEFAULT_DOC_WORDS = {0: 1500, 3: 700}
DEFAULT_DEMO_WORDS = 300

DOC_MARKER = "Paper: "  # the _hard variants' layout
SUMMARY_CUE = "Summary:"
HARD_SOURCE = "Attribute: Value control lines (the fine-tuning format)"


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
    try:
        f = float(str(value).strip().lower().removeprefix("bin").strip())
    except ValueError:
        raise DataError(f"{where}: length bin {value!r} is not an integer") from None
    if f != int(f) or f < 0:
        raise DataError(f"{where}: length bin {value!r} is not a non-negative integer")
    return int(f)


def _label(value: Any, table: dict[str, str], what: str, where: str) -> str:
    v = str(value).strip().lower()
    if v not in table:
        raise DataError(f"{where}: {what} {value!r} is not one of {sorted(table)}")
    return table[v]


def resolve_columns(columns: list[str], subset: str, column_map: dict | None, where: str) -> dict[str, str | None]:
    """Canonical field -> source column (None when absent); errors list the columns found."""
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
    needed = ("document", "summary", *REQUIRED[subset])
    missing = [f for f in needed if out[f] is None]
    if missing:
        raise DataError(
            f"{where}: no column for {missing}; columns found: {sorted(columns)}. Recognised "
            f"spellings: { {f: ALIASES[f] for f in missing} }. Map yours with metadata "
            f"column_map, e.g. --metadata '{{\"column_map\": {{\"{missing[0]}\": \"COLUMN\"}}}}'")
    return out


def normalize_records(rows: list[dict], subset: str, column_map: dict | None, where: str) -> tuple[list[dict], int]:
    """Canonical records and the number of rows skipped for an empty required control."""
    if not rows:
        return [], 0
    columns = sorted({c for r in rows for c in r})
    cols = resolve_columns(columns, subset, column_map, where)
    out, skipped = [], 0
    for i, r in enumerate(rows):
        w = f"{where}, row {i + 1}"
        doc, summ = r.get(cols["document"]), r.get(cols["summary"])
        if not isinstance(doc, str) or not isinstance(summ, str):
            raise DataError(f"{w}: document and summary must be strings")
        raw = {c: (r.get(cols[c]) if cols[c] else None) for c in CONTROLS}
        if any(_empty(raw[c]) for c in REQUIRED[subset] if c != "keywords") or (
                "keywords" in REQUIRED[subset] and raw["keywords"] is None):
            skipped += 1
            continue
        rec = {"id": r.get("id", f"ccsbench/{subset}/{i}"), "document": doc, "summary": summ,
               "length_bin": -1 if _empty(raw["length"]) else parse_length(raw["length"], w),
               "keywords": json.dumps(parse_keywords(raw["keywords"], w)),
               "readability": "" if _empty(raw["readability"]) else _label(raw["readability"], READABILITY, "readability", w),
               "focus": "" if _empty(raw["focus"]) else _label(raw["focus"], FOCUS, "focus", w)}
        out.append(rec)
    if skipped:
        log.warning("%s: skipped %d of %d rows with an empty required control %s",
                    where, skipped, len(rows), REQUIRED[subset])
    return out, skipped


def _hub_rows(subset: str, split: str, task: str) -> list[dict]:
    """Rows of the hub dataset (CSV files; layout unverified offline: tries the subset
    as a config name, then as a ``data_dir``)."""
    import datasets

    errors = []
    for kwargs in ({"name": subset}, {"data_dir": subset}):
        try:
            return list(datasets.load_dataset(HUB_PATH, split=split, **kwargs))
        except Exception as exc:  # network, layout
            errors.append(f"{kwargs}: {exc}")
    raise DataError(f"task {task!r}: could not load {HUB_PATH} ({subset}, {split}) from the hub: "
                    f"{errors}. Without internet, set data_dir to a mirror holding "
                    f"ccsbench/{subset}/{split}.jsonl.")


def load_records(subset: str, split: str, metadata: dict, task: str) -> list[dict]:
    """Canonical, validated records of one split; skipped rows counted in ``metadata``."""
    if subset not in SUBSETS:
        raise DataError(f"task {task!r}: unknown CCSBench subset {subset!r}; known: {SUBSETS}")
    data_dir = setting(metadata, "data_dir")
    cmap = metadata.get("column_map")
    if isinstance(cmap, str):
        cmap = json.loads(cmap)
    if resolve_data_dir(data_dir) is not None:
        rows = load_split("ccsbench", subset, split, data_dir, task, required=())
        where = f"task {task!r}: {resolve_data_dir(data_dir)}/ccsbench/{subset}/{split}.jsonl"
    else:
        rows, where = _hub_rows(subset, split, task), f"task {task!r}: {HUB_PATH} {subset}/{split}"
    recs, skipped = normalize_records(rows, subset, cmap, where)
    metadata.setdefault("skipped_rows", {})[split] = skipped
    return recs


# --------------------------------------------------------------------------- prompts


def hard_lines(rec: dict) -> list[str]:
    """``Attribute: Value`` control lines (the format used for fine-tuned models)."""
    out = []
    if rec.get("length_bin", -1) >= 0:
        out.append(f"Length: {rec['length_bin']}")
    kws = json.loads(rec.get("keywords") or "[]")
    if kws:
        out.append("Keywords: " + ", ".join(kws))
    if rec.get("readability"):
        out.append(f"Readability: {rec['readability']}")
    if rec.get("focus"):
        out.append(f"Focus: {rec['focus']}")
    return out


def turn(rec: dict, budget: dict, spec: PromptSpec | None) -> str:
    """One turn: the instruction prompt of ``spec``, or (``spec`` None, the ``_hard``
    variants) ``Attribute: Value`` lines."""
    doc = truncate(rec["document"], **budget)
    if spec is None:
        return "\n".join([*hard_lines(rec), DOC_MARKER + doc, SUMMARY_CUE])
    return spec.render_turn(rec, doc)


def build_prompt(rec: dict, demos: list[dict], budget: dict, demo_budget: dict,
                 spec: PromptSpec | None) -> str:
    """Demonstrations (turn, separator, abstract) then the query turn."""
    answer_sep = " " if spec is None else spec.answer_separator
    demo_sep = "\n\n" if spec is None else spec.demo_separator
    parts = [turn(d, demo_budget, spec) + answer_sep + d["summary"].strip() for d in demos]
    parts.append(turn(rec, budget, spec))
    return demo_sep.join(parts)


def build_docs(domain: str, shots: int, task: str, metadata: dict, split: str = "test") -> list[dict]:
    """Records of ``split`` for subset ``domain`` with ``prompt`` (registry interface).

    ``task`` ending in ``_hard`` selects the ``Attribute: Value`` prompt. Demonstrations
    (``shots`` > 0) come from ``train``, drawn per document with ``fewshot_seed``.
    """
    spec = None if task.endswith("_hard") else resolve_prompt_spec(metadata, task)
    docs = load_records(domain, split, metadata, task)
    n = int_setting(metadata, "sample_test")
    if n is not None and n < len(docs):
        rng = random.Random(int_setting(metadata, "sample_seed", 42))
        docs = [docs[i] for i in sorted(rng.sample(range(len(docs)), n))]
    tok = setting(metadata, "prompt_tokenizer")
    budget = {"max_words": int_setting(metadata, "max_doc_words", DEFAULT_DOC_WORDS[0 if shots == 0 else 3]),
              "max_tokens": int_setting(metadata, "max_doc_tokens"), "tokenizer_name": tok}
    demo_budget = {"max_words": int_setting(metadata, "max_demo_words", DEFAULT_DEMO_WORDS),
                   "max_tokens": int_setting(metadata, "max_demo_tokens"), "tokenizer_name": tok}
    pool: list[dict] = []
    if shots:
        pool = load_records(domain, "train", metadata, task)
        if len(pool) < shots:
            raise DataError(f"task {task!r}: {len(pool)} usable train records; {shots} demonstrations needed")
    seed = int_setting(metadata, "fewshot_seed", DEFAULT_SEED)
    metadata["fewshot_seed_used"] = seed
    for d in docs:
        demos = random.Random(f"{seed}:{d['id']}").sample(pool, shots) if shots else []
        d["prompt"] = build_prompt(d, demos, budget, demo_budget, spec)
        d["demo_ids"] = json.dumps([x["id"] for x in demos])
    report_load(task, skipped_rows=dict(metadata.get("skipped_rows", {})), fewshot_seed_used=seed,
                ccs_prompt_source=HARD_SOURCE if spec is None else spec.source)
    return docs


def load(**kwargs: Any):
    """``custom_dataset`` entry point (metadata + dataset_kwargs from the YAML)."""
    import datasets

    subset = kwargs.pop("domain")
    shots = int(kwargs.pop("shots", 0))
    task = kwargs.pop("task", f"ccsbench_{subset}")
    docs = build_docs(subset, shots, task, kwargs)
    if not docs:
        raise DataError(f"task {task!r}: no usable test record")
    return {"test": datasets.Dataset.from_list(docs)}


# --------------------------------------------------------------------------- task

FAMILY_KEYS = {
    "length": ("length_pcc", "length_mad"),
    "keywords": ("keyword_sr",),
    "readability": ("fkgl_normal", "fkgl_high", "delta_fkgl"),
    "focus": ("focus_f1_high", "focus_f1_low", "focus_macro_f1", "focus_parse_failures"),
}
LOWER_IS_BETTER = {"length_mad", "fkgl_high", "focus_parse_failures"}


class CCSBenchTask(SummarizationTask):
    """ROUGE plus the controllability metrics of the controls the subset sets.

    Items are ``(id, prediction, reference, controls JSON)``; every family is one
    batched call into :mod:`custom_metrics.ccs`. Focus needs a judge; without one it
    is skipped with one notice.
    """

    FAMILIES: tuple[str, ...] = ("rouge",)

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        subset = (self.config.dataset_kwargs or {}).get("domain", "compositional")
        fams = ["rouge", *REQUIRED[subset]]
        # the prompt file also sets the focus judge's instruction and, for the instruction
        # prompt (not the _hard lines), the stop strings that fit its layout
        self._prompt_spec = resolve_prompt_spec(self.meta, self.config.task)
        if not self.config.task.endswith("_hard") and self._prompt_spec.source != DEFAULT_SPEC.source:
            self.config.generation_kwargs = {**(self.config.generation_kwargs or {}),
                                             "until": list(self._prompt_spec.until)}
        self._judge_config = None
        if "focus" in fams:
            from custom_metrics.judge import notice_judge_skipped, resolve_judge_config

            self._judge_config = resolve_judge_config(self.meta)
            if self._judge_config is None:
                notice_judge_skipped(f"task {self.config.task}: focus F1")
                fams.remove("focus")
            else:
                self.meta["judge_model_used"] = self._judge_config.model
                self.meta["judge_base_url_used"] = self._judge_config.base_url
        self.FAMILIES = tuple(fams)
        if "readability" in self.FAMILIES:
            from custom_metrics.ccs import fkgl_syllable_source

            self.meta["fkgl_syllables"] = fkgl_syllable_source()

    def family_keys(self, family: str) -> tuple[str, ...]:
        if family in FAMILY_KEYS:
            return FAMILY_KEYS[family]
        return super().family_keys(family)

    def higher_is_better(self) -> dict[str, bool]:
        return {k: k not in LOWER_IS_BETTER for k in self.metric_names()}

    def process_results(self, doc: dict, results: list) -> dict:
        out = super().process_results(doc, results)
        controls = json.dumps({"length_bin": doc.get("length_bin", -1), "keywords": doc.get("keywords", "[]"),
                               "readability": doc.get("readability", ""), "focus": doc.get("focus", "")})
        return {k: (*v, controls) for k, v in out.items()}

    def score_family(self, family: str, items):
        from custom_metrics import ccs

        preds = [it[1] for it in items]
        ctl = [json.loads(it[3]) if len(it) > 3 else {} for it in items]
        if family == "length":
            res = ccs.length_scores(preds, [c["length_bin"] if c.get("length_bin", -1) >= 0 else None for c in ctl])
            return {k: res[k] for k in FAMILY_KEYS["length"]}
        if family == "keywords":
            return {"keyword_sr": ccs.keyword_success_rate(preds, [json.loads(c.get("keywords") or "[]") for c in ctl])}
        if family == "readability":
            return ccs.readability_scores(preds, [c.get("readability") or None for c in ctl])
        if family == "focus":
            labels, res = ccs.judge_focus(preds, self._judge_config, messages=self._prompt_spec.focus_messages)
            self.meta["focus_judge_prompt_source"] = self._prompt_spec.source
            self.meta["judge_usage"] = res.stats.as_dict()
            out = ccs.focus_f1(labels, [c.get("focus") or None for c in ctl])
            out["focus_parse_failures"] = float(res.parse_failures)
            return out
        return super().score_family(family, [it[:3] for it in items])
