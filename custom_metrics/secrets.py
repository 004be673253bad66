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
* the password of a URL's user-info (the whole user-info when it has no password:
  some services take the key as the user name), and the value of query parameters whose name says
  key, token, secret, password or signature, whatever their value.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import traceback
import unicodedata
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

ENV_VARS = ("OPENAI_API_KEY", "DOMSUM_JUDGE_API_KEY")
MIN_LEN = 6
MASK = "[api key masked]"
URL_MASK = "***"

_REGISTERED: set[str] = set()

# scheme://user:password@host -> scheme://user:***@host; scheme://KEY@host -> scheme://***@host
_USERINFO_RE = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^\s/@:\"']*:)?)(?P<secret>[^\s/@\"']+)(?=@)")
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


def masked_json(obj: Any, secrets: Sequence[str]) -> tuple[Any, str]:
    """``obj`` masked as :func:`mask_obj` masks it, and its JSON text (``ensure_ascii=False``,
    as the judge cache stores rows); ``obj`` itself when nothing in it needs masking.

    Why: the judge cache masks and serializes two values per answer, and walking them
    string by string cost more than serializing them. Serializing first settles the
    common case in one pass: JSON escapes a string character by character, so a
    secret, ``://`` or ``=`` (the triggers of the URL patterns) inside any string
    shows in the text as the same characters, or for a secret as its escaped form;
    when the text has none of them no string needs masking. Otherwise the value is
    masked string by string as before.
    """
    text = json.dumps(obj, ensure_ascii=False)
    if "://" in text or "=" in text or any(s in text or json.dumps(s, ensure_ascii=False)[1:-1] in text
                                           for s in secrets):
        obj = mask_obj(obj, secrets)
        text = json.dumps(obj, ensure_ascii=False)
    return obj, text


# ------------------------------------------------------------------ keys before sending


def key_problem(value: Any) -> str | None:
    """Why ``value`` cannot be sent as an API key (in an HTTP header), or None.

    Why checked up front: a key pasted with a trailing no-break space failed deep in the
    HTTP client as a ``UnicodeEncodeError`` traceback, and one ending in ``\\r`` as a
    "connection error". The text names the character and its place, never the key.
    """
    if not isinstance(value, str):
        return None
    for i, ch in enumerate(value):
        if not " " <= ch <= "~":
            return (f"printable ASCII (character {i + 1} of {len(value)} is "
                    f"{unicodedata.name(ch, 'a control character')} U+{ord(ch):04X})")
    if value != value.strip():
        return f"free of surrounding whitespace (it {'begins' if value[:1].isspace() else 'ends'} with a space)"
    return None


def split_url_key(url: str) -> tuple[str, str | None]:
    """``url`` without the key it carries (a user-info password ``https://user:KEY@host``
    or a query parameter named like a key), and that key (None when it carries none).

    Why: the HTTP client turns user-info into Basic auth (replacing the Bearer key) and
    appends the request path after a query (``/v1/?api_key=...chat/completions``); both
    lines are also logged with the key in them. A URL keeps its other parts as written.
    """
    parts = urllib.parse.urlsplit(url)
    key: str | None = None
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        key = urllib.parse.unquote(password or user) or None
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    kept = []
    for name, value in query:
        if _QUERY_RE.match(f"?{name}=x") and value:
            key = key or value
        else:
            kept.append((name, value))
    if key is None:
        return url, None
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, urllib.parse.urlencode(kept),
                                    parts.fragment)), key


# ------------------------------------------------------------------ every log line


class MaskingFilter(logging.Filter):
    """Masks a log record's message, arguments, exception and stack text in place
    (always lets it through). Installed by :func:`install_log_masking`."""

    def filter(self, record: logging.LogRecord) -> bool:
        mask_record(record)
        return True


def mask_record(record: logging.LogRecord) -> logging.LogRecord:
    """``record`` with its final message and any exception text masked (once)."""
    if getattr(record, "_domsum_masked", False):
        return record
    secrets = known()
    try:
        message = record.getMessage()
    except Exception:  # a malformed record: leave its formatting error to logging
        return record
    record.msg, record.args = _mask_text(message, secrets), None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = _mask_text(record.exc_text, secrets)
    if record.stack_info:
        record.stack_info = _mask_text(record.stack_info, secrets)
    record._domsum_masked = True
    return record


#: the loggers that print request URLs, headers or bodies
LOGGERS = ("httpx", "httpcore", "openai", "urllib3", "lm_eval", "lm-eval")
_FILTER = MaskingFilter()
_INSTALLED = False


def install_log_masking() -> None:
    """Mask every log record of the process, whatever its logger, level or handler.

    Three layers, because each alone misses something: the record factory masks every
    record as it is made (child loggers such as ``httpcore.http11`` and handlers added
    later by lm-eval included); the filter on the named loggers and on the root's
    handlers covers records made by a factory someone installed after ours. Uncaught
    exceptions are printed masked too (``sys.excepthook``). Idempotent.
    """
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return mask_record(previous(*args, **kwargs))

    logging.setLogRecordFactory(factory)
    for name in LOGGERS:
        logging.getLogger(name).addFilter(_FILTER)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_FILTER)
    hook = sys.excepthook

    def masked_hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        text = "".join(traceback.format_exception(kind, exc, tb))
        if text != mask(text):
            sys.stderr.write(mask(text))
            return
        hook(kind, exc, tb)

    sys.excepthook = masked_hook
