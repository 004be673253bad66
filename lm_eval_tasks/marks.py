"""Generated parts of a Markdown page, each between two HTML-comment marks, rewritten without
touching the rest of the page.

Why one helper: three kinds of page mix generated text with prose a person wrote: the
``docs/`` pages and the task READMEs (:mod:`lm_eval_tasks.reference`), and the README
``domsum new-task`` writes into a user's folder (:mod:`lm_eval_tasks.benchmarks.own.folder`).
Each finds its parts, rewrites them and leaves every line outside the marks as it was; they
differ only in the words of their marks (a Markdown viewer shows neither).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Marks:
    """The two marks around a part named ``{name}``: ``begin`` goes on after the name with a
    space (and may say how the part is written) to `` -->``; ``end`` is the closing mark."""

    begin: str
    end: str

    def pattern(self, name: str | None = None) -> re.Pattern[str]:
        """The part called ``name`` (any part: None) with its marks; groups ``name`` and ``body``
        (the text between the marks, from the line after the begin mark)."""
        opening, closing = self.begin.partition("{name}")[0], self.end.split("{name}")
        which = re.escape(name) if name is not None else r"[\w-]+"
        return re.compile(rf"{re.escape(opening)}(?P<name>{which}) [^\n]*?-->\n(?P<body>.*?)"
                          rf"{re.escape(closing[0])}(?P=name){re.escape(closing[1])}", re.S)

    def wrap(self, name: str, body: str) -> str:
        """``body`` between the marks of part ``name`` (``body`` ends with its own newline)."""
        return f"{self.begin.format(name=name)}\n{body}{self.end.format(name=name)}"

    def parts(self, text: str) -> dict[str, str]:
        """Every marked part of ``text``: name -> body."""
        return {m.group("name"): m.group("body") for m in self.pattern().finditer(text)}

    def replace(self, text: str, fresh: Mapping[str, str]) -> str:
        """``text`` with the body of every part named in ``fresh`` replaced, and the rest as it was."""
        return self.pattern().sub(lambda m: self.wrap(m.group("name"), fresh[m.group("name")])
                                  if m.group("name") in fresh else m.group(0), text)


__all__ = ["Marks"]
