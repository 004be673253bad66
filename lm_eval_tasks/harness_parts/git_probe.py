"""lm-eval's commit probe, without its stray line on stderr.

Why: the harness runs ``git describe --always`` with stderr inherited, so a run started
from any folder that is not a git checkout (``domsum demo``, a user's project) printed
``fatal: not a git repository``. The answer stays the harness's: the commit, or its
fallback over the working folder's ``.git`` files, or None.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable


def quiet_git_hash(fallback: Callable[[str], str | None]) -> str | None:
    """The working folder's commit with git's stderr captured; ``fallback(cwd)`` (the
    harness's own ``.git`` file reader) when git has no answer."""
    try:
        return subprocess.run(["git", "describe", "--always"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return fallback(os.getcwd())


__all__ = ["quiet_git_hash"]
