"""Helpers shared by the unit and integration tests of report_identity (tests/unit, tests/integration)."""

from __future__ import annotations


TASK_0, TASK_2 = "domainsum_cnndm", "domainsum_cnndm_2shot"
