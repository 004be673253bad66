"""Writing the suite's output files: whole or not at all.

The writer lives in :mod:`custom_metrics.outputs` (the metric library's analyses write
folders too, and it imports nothing from here); this name stays for the harness side's
callers (the data mirror, rescore).
"""

from __future__ import annotations

from custom_metrics.outputs import OutputError, OutputExistsError, claim, output_folder, write_atomically

__all__ = ["OutputError", "OutputExistsError", "claim", "output_folder", "write_atomically"]
