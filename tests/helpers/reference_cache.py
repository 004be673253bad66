"""Helpers shared by the unit and integration tests of reference_cache (tests/unit, tests/integration)."""

from __future__ import annotations

from importlib import import_module


rc = import_module("custom_metrics.reference_cache")
