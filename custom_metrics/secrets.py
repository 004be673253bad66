"""The one place secrets are hidden: every file the suite writes and every line it prints
about a judge, an endpoint or the settings passes through :func:`mask` or :func:`mask_obj`.

Why one place: a key reaches the suite by several doors (``OPENAI_API_KEY``,
``DOMSUM_JUDGE_API_KEY``, a judge config, ``judge_api_key`` in ``--metadata``, a URL's
user-info ``https://user:KEY@host`` or query ``?api_key=KEY``) and leaves by several
(results JSON, run cards, the judge cache, printed commands, error messages, a 401 body
that echoes the key). Each writer calling its own masking is how one of them forgets.

What is hidden:

* every known key value (the environment's, a judge config's, and those registered by
  :func:`register` when a setting marked secret is read), also in its JSON-escaped and
  URL-quoted forms. Values shorter than :data:`MIN_LEN` are placeholders ("EMPTY",
  "x"), not secrets: masking them would mangle ordinary text;
* the password of a URL's user-info, and the value of query parameters whose name says
  key, token, secret, password or signature, whatever their value.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

ENV_VARS = ("OPENAI_API_KEY", "DOMSUM_JUDGE_API_KEY")
MIN_LEN = 6
MASK = "[api key masked]"
URL_MASK = "***"

_REGISTERED: set[str] = set()

# scheme://user:password@host -> scheme://user:***@host
_USERINFO_RE = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/@:\"']*:)(?P<secret>[^\s/@\"']+)(?=@)")
# ?api_key=...&token=... -> ?api_key=***&token=***
_QUERY_RE = re.compile(
    r"(?P<head>[?&;](?:[\w.-]*(?:key|token|secret|password|passwd|pwd|sig|signature|auth)[\w.-]*)=)"
    r"(?P<secret>[^&;#\s\"']+)", re.I)


def register(value: Any) -> None:
    """Remember a secret read from somewhere other than the environment (a metadata key)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_LEN:
        _REGISTERED.add(value.strip())


def known(config: Any = None) -> list[str]:
    """The values to hide: registered, the config's ``api_key``, the environment's; in
    every form they can take inside JSON or a URL; longest first (a key containing
    another is replaced whole)."""
    values = set(_REGISTERED) | {getattr(config, "api_key", None)} | {os.environ.get(v) for v in ENV_VARS}
    found: set[str] = set()
    for v in values:
        if isinstance(v, str) and len(v.strip()) >= MIN_LEN:
            v = v.strip()
            found.update({v, json.dumps(v)[1:-1], urllib.parse.quote(v, safe="")})
    return sorted(found, key=len, reverse=True)


def _mask_text(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    if "://" in text:
        text = _USERINFO_RE.sub(lambda m: m.group("head") + URL_MASK, text)
    if "=" in text:
        text = _QUERY_RE.sub(lambda m: m.group("head") + URL_MASK, text)
    return text


def mask(text: Any, config: Any = None) -> str:
    """``text`` (made a string) with every secret hidden (see the module docstring)."""
    return _mask_text(text if isinstance(text, str) else str(text), known(config))


def mask_obj(obj: Any, secrets: Sequence[str] | None = None) -> Any:
    """A copy of a JSON-like value with every string masked (error bodies, cache rows,
    results metadata, run cards); ``secrets``: :func:`known` when not given."""
    secrets = known() if secrets is None else secrets
    if isinstance(obj, str):
        return _mask_text(obj, secrets)
    if isinstance(obj, Mapping):
        return {k: mask_obj(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [mask_obj(v, secrets) for v in obj]
    return obj

