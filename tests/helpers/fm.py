"""Helpers shared by the unit and integration tests of fm (tests/unit, tests/integration)."""

from __future__ import annotations


JUDGE_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "DOMSUM_JUDGE_MODEL", "DOMSUM_JUDGE_CACHE")
