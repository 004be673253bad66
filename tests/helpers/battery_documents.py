"""Helpers shared by the unit and integration tests of battery_documents (tests/unit, tests/integration)."""

from __future__ import annotations

import math


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def _aggregation() -> dict[str, str]:
    """key -> aggregation of every battery key, from the family records."""
    from custom_metrics import registry
    from custom_metrics.battery import MEDQSUM

    return {k.name: k.aggregation for name in MEDQSUM for k in registry.get(name).keys}
