"""Helpers shared by the unit and integration tests of judge_faults (tests/unit, tests/integration)."""

from __future__ import annotations


KEY = "sk-live-TOPSECRET-0123456789abcdef"
