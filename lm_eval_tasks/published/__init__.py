"""The papers' published numbers, shipped as data: ``published/<benchmark>.json``.

Why a package below ``report`` and the analysis commands, not inside ``report``: the
report and the analysis commands (``domain-stats``, ``token-shift``, ``cross-domain``,
``meta-eval``) all place a user's numbers beside the paper's, through one record
(:mod:`~lm_eval_tasks.published.beside`) and one protocol check
(:mod:`~lm_eval_tasks.published.protocol`); living in ``report`` made the analysis
package import the report while the report imports the analysis (the change-amplitude
study it lays out).

Why data and not code: a reproduction is judged against the paper's own numbers, and a
reviewer must be able to check every one of them against the paper without reading
Python. Each file holds one paper's values, each with its table, row and column as the
paper prints them, so a value is cited exactly as published and found again in the
paper's text.

A file's fields:

* ``paper``, ``title``, ``citation``, ``benchmark`` (the suite's benchmark name; null for
  a paper whose numbers are a meta-evaluation on its own data, as the Facet-aware Metric
  paper's FD benchmark, which ``domsum meta-eval`` reads rather than a harness task);
* ``tables``: table name -> what the paper's caption says the table shows;
* ``models``: the paper's row name of a model -> the model ids it names (Hugging Face
  ids or API model names; empty where the paper names none), so a user's run of the
  same model finds the paper's row;
* ``metrics``: the paper's column name -> ``keys`` (the suite's metric keys computing it),
  ``scale`` (the paper's number divided by the key's raw value: 100 where the paper
  prints x100) and ``definition``;
* ``values``: one object per published number: ``table``, ``row``, ``column``,
  ``value`` and what it is — ``metric`` (a ``metrics`` name), ``setting`` (``0-shot``,
  ``2-shot``, ``2-shot minus 0-shot`` (a published difference), ``fine-tuned``, ...),
  ``model`` (a ``models`` name) and ``subset`` (the suite's subset) where they apply,
  ``block`` (the table's row group) and further fields of the table (``level``,
  ``measure``, ``significant``, ``training_instances``, ``rank``, ``id``, ...);
* ``unreadable``: the cells (or whole tables and figures) whose value the paper's text
  does not give unambiguously (left out, never guessed), each with the reason;
* ``protocols`` (the file's last key): table name -> how the paper produced that table's
  numbers, so a run placed beside them can be checked field by field
  (:mod:`lm_eval_tasks.published.protocol`): ``source`` (where the paper, or its release where
  the paper is silent, states it, quoted), ``documents`` (``split``, ``count`` — an int or
  subset -> int —, ``selection``), ``metrics`` (the paper's metric name -> its variant:
  ROUGE ``implementation``, ``variant``, ``stemming``; BERTScore ``encoder``, ``layer``,
  ``idf``, ``rescale_with_baseline``; DVO ``vocabulary`` (and ``size``); an LLM judge's
  ``judge_model``; free fields for the others), ``generation`` (``max_new_tokens``,
  ``decoding``) and ``blocks`` (the table's row groups, as the values name them -> partial
  overrides, deep-merged over the table's protocol). Any leaf may be ``{"unknown": reason}``:
  what the paper does not state is said so, never guessed. Models per row are ``models``;
  shots are each value's ``setting``.

Every table of a file that publishes results of systems (a value names a ``model``, or
``models`` is not empty) has a protocol; a metric of the table whose numbers a suite key
computes states every field of its kind. The checks run once, at load.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError

#: the folder of the data files (shipped in the wheel: setup.cfg package_data)
FOLDER = Path(__file__).parent  # the JSON files lie beside this module
#: fields every value carries
REQUIRED = ("table", "row", "column", "value", "metric", "setting")
#: the fields of a file, in the order the files keep them (``protocols`` last)
FIELDS = ("paper", "title", "citation", "benchmark", "tables", "models", "metrics", "values", "unreadable")
#: the fields a metric's protocol states, by the kind of metric its suite keys compute (:func:`metric_kind`)
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "rouge": ("variant", "stemming"),
    "bertscore": ("encoder", "layer", "idf", "rescale_with_baseline"),
    "dvo": ("vocabulary",),
    "judge": ("judge_model",),
}
#: the type of every named leaf of a protocol, wherever it appears (an ``unknown`` leaf aside)
LEAF_TYPES: dict[str, type | tuple[type, ...]] = {
    "source": str, "split": str, "selection": str, "implementation": str, "variant": str, "stemming": bool,
    "encoder": str, "layer": int, "idf": bool, "rescale_with_baseline": bool, "vocabulary": str, "size": int,
    "judge_model": str, "decoding": str,
}
#: leaves that hold a number, or one number per subset
PER_SUBSET = ("count", "max_new_tokens")
PROTOCOL_KEYS = ("source", "documents", "metrics", "generation", "blocks")


class PublishedDataError(SuiteError):
    """A shipped data file is missing a field or names an unknown metric or model."""


@dataclass(frozen=True)
class Published:
    """One paper's published numbers (see the module docstring for the fields)."""

    paper: str
    title: str
    citation: str
    benchmark: str | None
    tables: dict[str, str]
    models: dict[str, list[str]]
    metrics: dict[str, dict[str, Any]]
    values: list[dict[str, Any]]
    unreadable: list[str]
    path: Path
    protocols: dict[str, dict[str, Any]] = field(default_factory=dict)

    def find(self, **fields: Any) -> list[dict[str, Any]]:
        """Every value whose fields equal ``fields`` (in file order)."""
        return [v for v in self.values if all(v.get(k) == want for k, want in fields.items())]

    def one(self, **fields: Any) -> dict[str, Any] | None:
        """The one value with ``fields``, or None; two would be an ambiguous citation."""
        found = self.find(**fields)
        if len(found) > 1:
            raise PublishedDataError(f"{self.path.name}: {len(found)} values match {fields}")
        return found[0] if found else None

    def cite(self, value: dict[str, Any]) -> str:
        """Where ``value`` is printed: ``DomainSum Table 2, row Llama3.1-8B, column CNN/DM ROUGE``."""
        return f"{self.paper} {value['table']}, row {value['row']}, column {value['column']}"

    def model_of(self, model_id: str | None) -> str | None:
        """The paper's row name of the model ``model_id`` (a Hugging Face id, a local folder
        named like it, or an API model name), or None. Compared by the id's last path
        part, case-insensitively: a local copy keeps the hub repository's name."""
        if not model_id:
            return None
        name = str(model_id).rstrip("/").rsplit("/", 1)[-1].casefold()
        for row, ids in self.models.items():
            if any(name == i.rsplit("/", 1)[-1].casefold() for i in ids):
                return row
        return None

    def keys(self, metric: str) -> list[str]:
        """The suite's keys that compute the paper's column ``metric``."""
        return list(self.metrics.get(metric, {}).get("keys", []))

    def scale(self, metric: str) -> float:
        return float(self.metrics[metric].get("scale", 1))

    def protocol(self, table: str, block: str | None = None) -> dict[str, Any] | None:
        """The paper's protocol of ``table`` (of its row group ``block``: the block's fields
        deep-merged over the table's), None where the file declares none."""
        found = self.protocols.get(table)
        if found is None:
            return None
        base = {k: v for k, v in found.items() if k != "blocks"}
        override = (found.get("blocks") or {}).get(block) if block is not None else None
        return merged(base, override) if override else base


def is_unknown(value: Any) -> bool:
    """A leaf the paper does not state: ``{"unknown": "<reason>"}``."""
    return isinstance(value, dict) and set(value) == {"unknown"}


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` deep-merged over ``base`` (an ``unknown`` leaf replaces, never merges)."""
    out = dict(base)
    for k, v in override.items():
        if isinstance(v, dict) and not is_unknown(v) and isinstance(out.get(k), dict) and not is_unknown(out[k]):
            out[k] = merged(out[k], v)
        else:
            out[k] = v
    return out


def metric_kind(keys: list[str]) -> str | None:
    """The kind of metric the suite keys compute (a :data:`KIND_FIELDS` key), None for others."""
    from custom_metrics import registry

    for key in keys:
        try:
            family = registry.family_of(key)
        except KeyError:
            continue
        if family.name in KIND_FIELDS:
            return family.name
        if "judge" in family.needs:
            return "judge"
    return None


def data_file(benchmark: str) -> Path:
    return FOLDER / f"{benchmark}.json"


def available() -> list[str]:
    """The benchmarks with a data file."""
    return sorted(p.stem for p in FOLDER.glob("*.json"))


@functools.lru_cache(maxsize=None)
def load(benchmark: str) -> Published | None:
    """The published numbers of ``benchmark``'s paper, None where the suite ships none.

    Raises :class:`PublishedDataError` when the file breaks the schema (checked here,
    once, so the report never shows a value it cannot cite).
    """
    path = data_file(benchmark)
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    for name in FIELDS:
        if name not in data:
            raise PublishedDataError(f"{path.name}: no '{name}'")
    for i, v in enumerate(data["values"]):
        missing = [f for f in REQUIRED if f not in v]
        if missing:
            raise PublishedDataError(f"{path.name}: value {i} lacks {', '.join(missing)}")
        if not isinstance(v["value"], (int, float)) or isinstance(v["value"], bool):
            raise PublishedDataError(f"{path.name}: value {i} is not a number: {v['value']!r}")
        if v["metric"] not in data["metrics"] or v["table"] not in data["tables"]:
            raise PublishedDataError(f"{path.name}: value {i} names an unknown metric or table")
        if "model" in v and v["model"] not in data["models"]:
            raise PublishedDataError(f"{path.name}: value {i} names the unknown model {v['model']!r}")
    protocols = data.get("protocols") or {}
    check_protocols(path.name, data, protocols)
    return Published(data["paper"], data["title"], data["citation"], data["benchmark"], data["tables"],
                     data["models"], data["metrics"], data["values"], data["unreadable"], path, protocols)


def check_protocols(name: str, data: dict[str, Any], protocols: Any) -> None:
    """Raise :class:`PublishedDataError` where ``protocols`` breaks the schema (module docstring)."""
    if not isinstance(protocols, dict):
        raise PublishedDataError(f"{name}: 'protocols' is not an object")
    systems = bool(data["models"]) or any("model" in v for v in data["values"])
    if systems:
        missing = [t for t in data["tables"] if t not in protocols]
        if missing:
            raise PublishedDataError(f"{name}: no protocol for {', '.join(missing)} (every table of a file with "
                                     "results of systems declares the paper's protocol under 'protocols')")
    for table, proto in protocols.items():
        where = f"{name}: protocols.{table}"
        if table not in data["tables"]:
            raise PublishedDataError(f"{where}: not a table of the file")
        if not isinstance(proto, dict):
            raise PublishedDataError(f"{where}: not an object")
        unknown_keys = sorted(set(proto) - set(PROTOCOL_KEYS))
        if unknown_keys:
            raise PublishedDataError(f"{where}: unknown field {unknown_keys[0]!r} (fields: {', '.join(PROTOCOL_KEYS)})")
        if not isinstance(proto.get("source"), str) or not proto["source"].strip():
            raise PublishedDataError(f"{where}: no 'source' (where the paper states it)")
        if "documents" not in proto:
            raise PublishedDataError(f"{where}: no 'documents'")
        _check_part(f"{where}", {k: v for k, v in proto.items() if k != "blocks"}, data)
        blocks = proto.get("blocks") or {}
        if not isinstance(blocks, dict):
            raise PublishedDataError(f"{where}.blocks: not an object")
        named = {v.get("block") for v in data["values"] if v["table"] == table}
        for block, override in blocks.items():
            if block not in named:
                raise PublishedDataError(f"{where}.blocks: {block!r} is no block of the table's values")
            if not isinstance(override, dict) or set(override) - {"documents", "metrics", "generation"}:
                raise PublishedDataError(f"{where}.blocks.{block}: holds only documents, metrics and generation")
            _check_part(f"{where}.blocks.{block}", merged({k: v for k, v in proto.items() if k != "blocks"},
                                                          override), data)
        _check_metrics_stated(where, table, proto, data)


def _check_part(where: str, proto: dict[str, Any], data: dict[str, Any]) -> None:
    """Types of every leaf; ``documents``, ``metrics`` and ``generation`` are objects; metric
    names are the file's."""
    for part in ("documents", "metrics", "generation"):
        if part in proto and not isinstance(proto[part], dict):
            raise PublishedDataError(f"{where}.{part}: not an object")
    docs = proto.get("documents", {})
    if docs is not None and not (set(docs) & {"split", "count", "selection"}):
        raise PublishedDataError(f"{where}.documents: states none of split, count, selection")
    for metric in proto.get("metrics", {}):
        if metric not in data["metrics"]:
            raise PublishedDataError(f"{where}.metrics: {metric!r} is not a metric of the file")
        if not isinstance(proto["metrics"][metric], dict):
            raise PublishedDataError(f"{where}.metrics.{metric}: not an object")
    _check_leaves(where, proto)


def _check_leaves(where: str, node: Any) -> None:
    for key, value in node.items():
        path = f"{where}.{key}"
        if isinstance(value, dict) and "unknown" in value:
            if set(value) != {"unknown"} or not isinstance(value["unknown"], str) or not value["unknown"].strip():
                raise PublishedDataError(f"{path}: an unknown leaf is {{\"unknown\": \"<reason>\"}}")
            continue
        if key in PER_SUBSET:
            numbers = value.values() if isinstance(value, dict) else [value]
            for n in numbers:
                if not is_unknown(n) and (not isinstance(n, int) or isinstance(n, bool) or n < 0):
                    raise PublishedDataError(f"{path}: {n!r} is not a count (an int, or subset -> int)")
            continue
        if isinstance(value, dict):
            _check_leaves(path, value)
            continue
        want = LEAF_TYPES.get(key)
        if want is not None and (not isinstance(value, want) or (want is int and isinstance(value, bool))):
            raise PublishedDataError(f"{path}: {value!r} is not a {getattr(want, '__name__', want)}")


def _check_metrics_stated(where: str, table: str, proto: dict[str, Any], data: dict[str, Any]) -> None:
    """Every metric of the table that a suite key computes states each field of its kind,
    in the table's protocol or in every block's."""
    used = dict.fromkeys(v["metric"] for v in data["values"] if v["table"] == table)
    blocks = list(dict.fromkeys(v.get("block") for v in data["values"] if v["table"] == table))
    base = {k: v for k, v in proto.items() if k != "blocks"}
    for metric in used:
        kind = metric_kind(list(data["metrics"][metric].get("keys", [])))
        if kind is None:
            continue
        for block in blocks:
            override = (proto.get("blocks") or {}).get(block) if block is not None else None
            stated = (merged(base, override) if override else base).get("metrics", {}).get(metric)
            lacking = [f for f in KIND_FIELDS[kind] if f not in (stated or {})]
            if lacking:
                where_block = f" (block {block})" if block else ""
                raise PublishedDataError(f"{where}.metrics.{metric}{where_block}: states no {', '.join(lacking)} "
                                         f"(a {kind} metric states {', '.join(KIND_FIELDS[kind])}; "
                                         "{\"unknown\": reason} where the paper is silent)")


__all__ = ["FOLDER", "KIND_FIELDS", "Published", "PublishedDataError", "available", "check_protocols", "data_file",
           "is_unknown", "load", "merged", "metric_kind"]
