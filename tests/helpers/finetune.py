"""Helpers shared by the unit and integration tests of finetune (tests/unit, tests/integration)."""

from __future__ import annotations


TASK = "domainsum_samsum"
