"""The fine-tuning package's error: one module below the configuration and the presets,
so that both raise it without importing each other."""

from __future__ import annotations

from custom_metrics.errors import SuiteError


class ConfigError(SuiteError, ValueError):
    """A bad configuration value; the message says which and what is allowed."""


__all__ = ["ConfigError"]
