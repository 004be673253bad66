"""Writing the suite's output files: whole or not at all.

Why one function: every command that writes a file a user keeps (rescore's scores and
summaries, the data mirror's splits) must never leave a half-written file behind when
it is interrupted, and the rule is easier kept in one place.
"""

from __future__ import annotations

from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all: a temporary file beside it, then a rename, so
    an interrupted command never leaves a half-written output or mirror split."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


__all__ = ["write_atomically"]
