"""The settings row type: one knob, declared by the code that reads it.

Why here, in the library's core: a metric family declares its settings beside its
formula (``custom_metrics/families/bertscore.py`` holds the BERTScore rows), the judge's
sit beside :class:`~custom_metrics.judge.JudgeConfig` and fill its defaults, and a
benchmark's record holds its own, so a new setting is one row where it is used, never an
edit to a central table. ``lm_eval_tasks.settings`` collects the rows, resolves values
(task metadata, then the environment, then the default) and generates the settings page
from them. This module imports nothing but the standard library and the error base.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from custom_metrics.errors import SuiteError


def as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


def as_int(value: Any) -> int:
    """An integer, strictly: ``2.5``, ``"2.5"`` and ``True`` are not silently truncated."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value.is_integer():
            return int(value)
        raise ValueError(value)
    text = str(value).strip(" \t\r\n")
    if not re.fullmatch(r"[+-]?[0-9]+", text):  # int() would also take "1_000" and control characters
        raise ValueError(value)
    return int(text)


def as_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    return float(value)


def json_or_str(value: Any) -> Any:
    """JSON text (an object or a list) as its value; anything else as given."""
    if isinstance(value, str) and value.strip()[:1] in "[{":
        return json.loads(value)
    return value


def words_or_map(value: Any) -> int | dict[str, int]:
    """A word count, or ``{name: count}`` (JSON text or a mapping), every count >= 1."""
    value = json_or_str(value)
    if isinstance(value, Mapping):
        out = {str(k): as_int(v) for k, v in value.items()}
        if any(v < 1 for v in out.values()):
            raise ValueError(value)
        return out
    n = as_int(value)
    if n < 1:
        raise ValueError(value)
    return n


def one_line(value: Any) -> str:
    """A name (``run_label``): one line of printable text, at most 80 characters, so it can
    head a table row, a legend entry and a CSV cell as given."""
    text = str(value).strip()
    if not text or len(text) > 80 or not text.isprintable():
        raise ValueError(value)
    return text


#: how the settings page names each converter's type
KIND_NAMES: dict[Callable[[Any], Any], str] = {as_int: "int", as_float: "float", str: "str", as_bool: "bool",
                                               json_or_str: "json/str", words_or_map: "int or {name: int}",
                                               one_line: "text (one line, at most 80 characters)"}


@dataclass(frozen=True)
class Setting:
    """One knob: its metadata key, environment variable, type, default and meaning."""

    key: str
    env: str | None
    kind: Callable[[Any], Any]
    default: Any
    doc: str
    group: str
    secret: bool = False
    #: inclusive bounds for numbers, or the allowed values (compared lower-case)
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] | None = None
    #: the lowest value is excluded (a ratio that must be positive)
    low_open: bool = False
    #: the type as the settings page names it, for a converter :data:`KIND_NAMES` lacks
    kind_name: str = ""
    #: a second environment variable read when ``env`` is unset (a client library's own)
    env_also: str = ""
    #: where the row stands on the settings page: right after / before the row of that key
    #: (neither: at the end of its group)
    after: str = ""
    before: str = ""
    #: part of the system a run evaluates, as the report tells runs apart: ``"prompt"``
    #: (it changes the prompt) or ``"judge"`` (it changes a judge's scores)
    system: str = ""
    #: the task-metadata key recording the value a run used (default ``<key>_used``)
    used: str = ""
    #: the help of the ``--<key>`` flag (dashes for underscores) of ``domsum rescore`` that sets
    #: the row ("": a flag without help); None: no such flag. ``flag_choices``: what the
    #: flag takes, where narrower than ``choices``
    flag: str | None = None
    flag_choices: tuple[str, ...] | None = None

    def check(self, value: Any) -> str | None:
        """Why ``value`` (already of the row's type) is out of range; None when it is fine."""
        if self.secret:  # sent in an HTTP header: checked before the first request
            from custom_metrics.secrets import key_problem

            return key_problem(value)
        if self.choices is not None and str(value).strip().lower() not in self.choices:
            return f"one of {', '.join(self.choices)}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
            too_high = self.high is not None and value > self.high
            if too_low or too_high or value != value:  # NaN is in no range
                return self.range_text
        return None

    @property
    def range_text(self) -> str:
        lo = "" if self.low is None else (f"> {self.low:g}" if self.low_open else f">= {self.low:g}")
        hi = "" if self.high is None else f"<= {self.high:g}"
        if self.choices is not None:
            return f"one of {', '.join(self.choices)}"
        return " and ".join(x for x in (lo, hi) if x) or "any value"

    @property
    def type_name(self) -> str:
        name = self.kind_name or KIND_NAMES.get(self.kind) or getattr(self.kind, "__name__", "value")
        if self.choices is not None:
            return f"{name}: {' / '.join(self.choices)}"
        return name if self.range_text == "any value" else f"{name} {self.range_text}"

    @property
    def used_key(self) -> str:
        return self.used or f"{self.key}_used"

    @property
    def flag_type(self) -> Callable[[Any], Any] | None:
        """The ``type`` of the row's command flag (argparse names it in its errors)."""
        return {as_int: int, as_float: float}.get(self.kind)

    @property
    def table_row(self) -> str:
        """The row's line of the settings table (docs/settings.md)."""
        key = "(environment only)" if self.secret else f"`{self.key}`"
        env = (f"`{self.env}`" if self.env else "–") + (f" / `{self.env_also}`" if self.env_also else "")
        default = "–" if self.default is None else f"`{self.default}`"
        return f"| {key} | {env} | {self.type_name} | {default} | {self.doc} |"


def arrange(rows: Iterable[Setting], groups: Sequence[str]) -> dict[str, Setting]:
    """The rows by key, in page order: group by group, each row without a place in the
    order given, each row with one (``after`` / ``before``) beside the row it names (rows
    placed after the same row in the order given).

    Why places rather than one ordered list: the owners declare their rows apart, and a
    list naming them all would be the central table a new setting had to edit. A key
    declared twice, a group no page shows, or a place naming no row is an error.
    """
    rows = list(rows)
    seen: dict[str, Setting] = {}
    for row in rows:
        if row.key in seen:
            raise SuiteError(f"setting {row.key!r} is declared twice")
        if row.group not in groups:
            raise SuiteError(f"setting {row.key!r}: group {row.group!r} is not one of {', '.join(groups)}")
        seen[row.key] = row
    page = [r.key for g in groups for r in rows if r.group == g and not (r.after or r.before)]
    waiting = [r for r in rows if r.after or r.before]
    behind: dict[str, int] = {}  # rows already placed right after a row: the next goes after them
    while waiting:
        ready = [r for r in waiting if (r.after or r.before) in page]
        if not ready:
            raise SuiteError(f"setting {waiting[0].key!r} is placed beside {waiting[0].after or waiting[0].before!r}, "
                             f"which no row declares")
        for r in ready:  # in declaration order, so a chain of rows keeps its order
            at = page.index(r.after or r.before)
            if r.after:
                at += 1 + behind.get(r.after, 0)
                behind[r.after] = behind.get(r.after, 0) + 1
            page.insert(at, r.key)
            waiting.remove(r)
    return {key: seen[key] for key in page}


__all__ = ["KIND_NAMES", "Setting", "arrange", "as_bool", "as_float", "as_int", "json_or_str", "one_line", "words_or_map"]
