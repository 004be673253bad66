"""The papers' published numbers, shipped as data: ``published/<benchmark>.json``.

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
  does not give unambiguously (left out, never guessed), each with the reason.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError

#: the folder of the data files (shipped in the wheel: setup.cfg package_data)
FOLDER = Path(__file__).with_name("published")
#: fields every value carries
REQUIRED = ("table", "row", "column", "value", "metric", "setting")


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
    for field in ("paper", "title", "citation", "benchmark", "tables", "models", "metrics", "values", "unreadable"):
        if field not in data:
            raise PublishedDataError(f"{path.name}: no '{field}'")
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
    return Published(data["paper"], data["title"], data["citation"], data["benchmark"], data["tables"],
                     data["models"], data["metrics"], data["values"], data["unreadable"], path)


__all__ = ["FOLDER", "Published", "PublishedDataError", "available", "data_file", "load"]
