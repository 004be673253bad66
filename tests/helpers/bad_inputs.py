"""Helpers shared by the unit and integration tests of bad_inputs (tests/unit, tests/integration)."""

from __future__ import annotations

from pathlib import Path


TASK = "domainsum_cnndm"


def _mirror(tmp_path: Path, lines: list[str]) -> Path:
    root = tmp_path / "mirror"
    split = root / "domainsum" / "cnndm"
    split.mkdir(parents=True)
    (split / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
