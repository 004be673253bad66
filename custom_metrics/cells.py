"""Table cells made safe for the formats the suite writes: CSV and Markdown.

Why one module: every table holds the user's names (model folders, adapters, systems,
metrics, annotators), and a name is data, never markup or a formula. Each writer
escaping on its own is how one forgets (meta-eval's Markdown once split a system
``B|C`` into two cells; every CSV once let ``=HYPERLINK(...)`` run in a spreadsheet).

* :func:`csv_cell`: a cell a spreadsheet would run as a formula (it begins with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return, also after leading blanks, or with
  their full-width forms) gets a leading single quote, as OWASP advises for CSV
  injection; plain numbers (``-0.5``, ``+3``, ``1e-4``) stay numbers. Every CSV goes
  through :func:`write_csv` or :func:`frame_csv`.
* :func:`md_text`: Markdown passes inline HTML through, so a model folder named
  ``x<img src=x onerror=alert(1)>`` would be an image (and a script) on every page that
  renders the report; ``<``, ``>`` and an ``&`` that could begin an entity become entities
  (shown as written), and a line break, which would end a list item or a row, a space.
  Every line of prose a report writes with a name in it (verdicts, notes, captions) goes
  through it.
* :func:`md_escape`: a cell's text as :func:`md_text` makes it, and ``|``, which would
  end the cell, escaped. Every Markdown table goes through :func:`markdown_table` (or
  :func:`frame_markdown`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

#: first characters a spreadsheet reads as the start of a formula (and their full-width forms)
FORMULA_START = "=+-@\uff1d\uff0b\uff0d\uff20"
#: a cell beginning with one of these is neutralised whatever follows
CONTROL_START = "\t\r\n"
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: Any) -> Any:
    """``value`` safe for a spreadsheet: text a spreadsheet would evaluate gets a leading
    ``'``; numbers, plain numeric text and anything else are returned unchanged."""
    if not isinstance(value, str) or not value:
        return value
    if value[0] in CONTROL_START or value.lstrip(" \t\r\n\u00a0")[:1] in FORMULA_START:
        if _PLAIN_NUMBER.fullmatch(value):
            return value
        return "'" + value
    return value


def csv_text(header: Sequence[Any] | None, rows: Iterable[Sequence[Any]]) -> str:
    """A CSV document (header, then rows), every cell through :func:`csv_cell`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    if header is not None:
        w.writerow([csv_cell(c) for c in header])
    for row in rows:
        w.writerow([csv_cell(c) for c in row])
    return buf.getvalue()


def write_csv(path: Any, header: Sequence[Any] | None, rows: Iterable[Sequence[Any]]) -> Any:
    """:func:`csv_text` written whole (:func:`custom_metrics.outputs.write_atomically`); returns ``path``."""
    from pathlib import Path

    from custom_metrics.outputs import write_atomically

    write_atomically(Path(path), csv_text(header, rows))
    return path


def _plain(value: Any) -> Any:
    """A frame's value as a CSV cell: missing (None, NaN of any width, ``NaT``, ``pd.NA``)
    empty, as pandas writes it."""
    try:
        missing = value is None or bool(value != value)  # NaN and NaT differ from themselves
    except TypeError:  # pd.NA: its comparisons are NA, which has no truth value
        missing = True
    return "" if missing else value


def frame_csv(df: Any, path: Any, index: bool = True) -> Any:
    """A pandas frame as a CSV file through :func:`write_csv`: column names, index labels
    and every cell neutralised whatever their dtype, missing values empty.

    Why not ``DataFrame.to_csv`` on a neutralised copy: which columns hold text is a
    matter of dtype (``object`` before pandas 3, ``str`` from it), and a check of one
    dtype let a metric named ``+cmd`` through under the other; the one writer looks at
    each value instead.
    """
    names = list(df.index.names) if index else []
    header = [("" if n is None else n) for n in names] + [" ".join(map(str, c)) if isinstance(c, tuple) else c
                                                          for c in df.columns]
    rows = []
    for label, row in zip(df.index, df.itertuples(index=False, name=None)):
        labels = (list(label) if isinstance(label, tuple) else [label]) if index else []
        rows.append([_plain(v) for v in (*labels, *row)])
    return write_csv(path, header, rows)


#: backslashes a Markdown reader would take as escaping the ASCII punctuation after them
_ESCAPING = re.compile(r"(\\+)(?=[!-/:-@\[-`{-~])")


#: an ``&`` that could begin a character reference (``&lt;``, ``&#60;``); any other is shown as it is
_REFERENCE = re.compile(r"&(?=[#A-Za-z0-9])")


def md_text(text: Any) -> str:
    """``text`` safe as Markdown prose: no inline HTML (``<`` and ``>`` as entities, and ``&``
    where it could begin one, which every renderer shows as the characters themselves; a
    lone ``&`` as in "Yuan & Zhang" stays readable) and no line break. Backslashes right
    before punctuation (an entity's ``&`` included) are doubled, so that the user's ``\\<``
    or ``\\|`` shows as written; other backslashes are left as written."""
    out = _REFERENCE.sub("&amp;", str(text)).replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(_ESCAPING.sub(lambda m: m.group(1) * 2, out).splitlines())


def md_escape(text: Any) -> str:
    """A table cell's text made safe for a Markdown table: :func:`md_text` (whose doubled
    backslashes mean the user's own ``\\|`` cannot undo the escape), and ``|``, which would
    end the cell, escaped."""
    return md_text(text).replace("|", "\\|")


def markdown_table(header: Sequence[Any], rows: Iterable[Sequence[Any]],
                   align: Sequence[str] | None = None) -> str:
    """A Markdown table; every cell escaped (model, adapter, system and task names are the user's)."""
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def frame_markdown(df: Any, digits: int = 4) -> str:
    """A pandas frame (index as the first column) as an escaped Markdown table; numbers
    rounded to ``digits``, missing ones ``n/a``."""
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if not math.isfinite(v) else f"{round(v, digits):g}"
        return str(v)

    header = [df.index.name or "", *map(str, df.columns)]
    return markdown_table(header, [[cell(i), *map(cell, row)] for i, row in zip(df.index, df.itertuples(index=False))])


__all__ = ["CONTROL_START", "FORMULA_START", "csv_cell", "csv_text", "frame_csv", "frame_markdown", "markdown_table",
           "md_escape", "md_text", "write_csv"]
