"""Before the hub is asked for data: is it reachable, and what to set when it is not.

Why: without internet, ``datasets.load_dataset`` retries every file five times with
backoff (25-50 s per file) before it fails, and its error spans several lines. The loaders
call :func:`unreachable` first, which answers in at most :data:`PROBE_TIMEOUT`
seconds with one line naming the settings that help: a local mirror
(``DOMSUM_DATA_DIR`` / ``data_dir``) or ``HF_HUB_OFFLINE=1``, under which the libraries
read their local cache at once instead of trying the network.

The hub is never asked when a mirror is configured: the loaders decide that before they
get here (``lm_eval_tasks.data.loader.load_split``).
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

#: seconds the reachability probe waits for a TCP connection to the hub
PROBE_TIMEOUT = 3.0
#: environment variables under which the libraries never touch the network
OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
#: with a proxy the libraries know how to get out; a direct probe would say nothing
PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy")
#: what a user without internet sets, said once in every hub error
#: (no flag named: each command spells the data_dir setting its own way, the variable works for all)
OFFLINE_HINT = ("set DOMSUM_DATA_DIR (the data_dir setting) to a local mirror, "
                "built where the hub is reachable with `domsum prepare-data --help`; "
                "HF_HUB_OFFLINE=1 reads only the local Hugging Face cache, without network retries")


def offline_variables() -> list[str]:
    """The offline variables that are on, as ``NAME=value`` (for a message saying why)."""
    return [f"{name}={os.environ[name]}" for name in OFFLINE_ENV
            if os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}]


def offline_mode() -> bool:
    """Whether ``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` is on (the libraries' own rule)."""
    return bool(offline_variables())


def endpoint() -> tuple[str, int]:
    """(host, port) of the hub: ``HF_ENDPOINT`` or huggingface.co."""
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def unreachable(what: str) -> str | None:
    """One line for the caller's error when the hub's host does not answer a TCP connection
    within :data:`PROBE_TIMEOUT` s; None when it does. Not probed in offline mode (the
    library reads its cache and fails fast by itself) or behind a proxy (a direct
    connection proves nothing there)."""
    found = down()
    if found is None:
        return None
    host, reason = found
    return f"{what}: the hub ({host}) cannot be reached ({reason}) and no local mirror is configured: {OFFLINE_HINT}."


def down() -> tuple[str, str] | None:
    """``(host, reason)`` when the hub's host does not answer a TCP connection within
    :data:`PROBE_TIMEOUT` s; None when it does, in offline mode and behind a proxy."""
    if offline_mode() or any(os.environ.get(name) for name in PROXY_ENV):
        return None
    host, port = endpoint()
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT).close()
    except OSError as exc:
        return host, exc.strerror or type(exc).__name__
    return None


def one_line(exc: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message (the hub libraries' messages run long)."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first if len(first) <= limit else first[: limit - 3] + "..."


__all__ = ["OFFLINE_HINT", "PROBE_TIMEOUT", "down", "endpoint", "offline_mode", "offline_variables", "one_line",
           "unreachable"]
