"""A small OpenAI-compatible chat-completions server for judge tests and benchmarks.

Why our own: the judge core must be exercised against real HTTP (the ``openai``
client, its timeouts, status codes and JSON parsing) without a network or a paid
endpoint. The server speaks just enough of ``POST /v1/chat/completions``:
``choices[].message.content``, ``choices[].logprobs.content[].top_logprobs``,
``usage``, and OpenAI-style error bodies.

Behaviour is scripted per request:

* ``server.on(marker, *steps)``: a request whose messages contain ``marker`` plays
  the rule's steps in order, one per request; the last step then repeats. Rules are
  matched in the order they were added; a request matching none plays ``default``.
* Steps: :class:`Text` (a reply text, garbage included), :class:`Samples` (one text
  per choice for ``n > 1``), :class:`Logprobs` (a first-token distribution),
  :class:`Status` (an HTTP error such as 429 with ``Retry-After``, or 500),
  :class:`Hang` (sleep past the client's timeout, then answer), :class:`Stall` (no
  reply at all until the client gives up), :class:`Drip` (a reply sent one byte at a
  time, each within the client's read timeout), :class:`RawBody` (any bytes, e.g. an HTTP
  200 whose body is not JSON), :class:`Reset` (the connection is reset mid-request),
  :class:`EchoKey` (an error body that repeats the request's API key, as some
  servers do; the fault that key masking must survive).
* ``logprobs_support``: ``"yes"`` (answer them), ``"refuse"`` (a 400 naming
  ``logprobs``, as some hosted models do), ``"omit"`` (answer without them, as
  endpoints that ignore the parameter do).
* ``max_choices``: answer at most this many choices whatever ``n`` asks
  (``transformers serve`` always answers one).
* ``serialize``: answer one request at a time (``latency_s`` each, steps included),
  as a model served on a CPU does: the n-th of n concurrent requests waits for the
  others, and a request the client gave up on still occupies the server.
* ``slots``: answer at most this many requests at once, each in ``latency_s``, the
  others queued: a batching server (vLLM) whose latency stays flat up to its batch
  size (``serialize`` is ``slots=1``).

Every request is counted (``received``) and its JSON body kept (``bodies``), also
those answered by a fault step, and its path and ``Authorization`` header
(``requests``); ``arrivals_in_flight`` records how many requests
were at the server (this one included) when each arrived;
``latency_s`` delays each answer; the server stops itself after ``time_limit_s``
so a hung test cannot keep it alive. Start and stop it as a context manager::

    with StubJudgeServer(latency_s=0.1) as server:
        server.on("doc-7", Status(429), Text("4"))
        ... JudgeConfig(model="stub", base_url=server.url, api_key="x") ...
        assert server.received == 2
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import select
import socket
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Union

# --------------------------------------------------------------------------- test kit

#: the environment variables the judge settings read; tests clear them so that a
#: developer's own judge (or key) never leaks into a test
JUDGE_ENV = ("DOMSUM_JUDGE_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "DOMSUM_JUDGE_API_KEY",
             "DOMSUM_JUDGE_CACHE", "DOMSUM_JUDGE_CONCURRENCY", "DOMSUM_JUDGE_LOGPROBS",
             "DOMSUM_JUDGE_N_SAMPLES", "DOMSUM_JUDGE_TIMEOUT", "DOMSUM_JUDGE_MAX_RETRIES",
             "DOMSUM_JUDGE_MAX_REQUESTS", "DOMSUM_JUDGE_PRICE_PROMPT", "DOMSUM_JUDGE_PRICE_COMPLETION")


def clear_judge_env(monkeypatch: Any) -> None:
    """Unset :data:`JUDGE_ENV` (wrap as an autouse pytest fixture)."""
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def running_server(time_limit_s: float = 60.0) -> Iterator["StubJudgeServer"]:
    """A started default server, stopped afterwards (wrap as a pytest fixture)."""
    with StubJudgeServer(time_limit_s=time_limit_s) as srv:
        yield srv


def marked(marker: str) -> str:
    """The unambiguous form of a marker inside a request (rules match substrings)."""
    return f"<<{marker}>>"


def rating_request(marker: str) -> list[dict[str, str]]:
    """A minimal 1-5 rating request carrying ``marker``, for scripting per item."""
    return [{"role": "system", "content": "Rate the summary (1-5)."},
            {"role": "user", "content": f"Summary: item {marked(marker)}\n\n- Score (1-5):"}]


def stub_config(server: "StubJudgeServer", cache: Any = None, **overrides: Any) -> Any:
    """A ``JudgeConfig`` for this server that cannot hang a test: 1.5 s timeout,
    2 retries, millisecond backoff, no progress bar; ``overrides`` win."""
    from custom_metrics.judge import JudgeConfig

    base: dict[str, Any] = dict(model="stub-judge", base_url=server.url, api_key="test",
                                cache=str(cache) if cache else None, backoff_base_s=0.01,
                                backoff_cap_s=0.05, timeout=1.5, max_retries=2, progress=False)
    base.update(overrides)
    return JudgeConfig(**base)


# --------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Text:
    """Reply with ``text`` in every choice."""

    text: str


@dataclass(frozen=True)
class Samples:
    """Reply to an ``n``-choice request with these texts, cycled over the choices."""

    texts: tuple[str, ...]

    def __init__(self, *texts: str) -> None:
        object.__setattr__(self, "texts", tuple(texts))


@dataclass(frozen=True)
class Logprobs:
    """Reply whose score position has this token distribution (token -> probability).

    The chosen token is the most probable one; ``prefix`` tokens (each with
    probability 1) come before the score position, e.g. ``("Score", ":", " ")``.
    """

    dist: dict[str, float]
    prefix: tuple[str, ...] = ()

    def __hash__(self) -> int:  # dict field: hash by content
        return hash((tuple(sorted(self.dist.items())), self.prefix))


@dataclass(frozen=True)
class Status:
    """Answer with an HTTP error status and an OpenAI-style error body."""

    code: int
    message: str = "stub error"
    retry_after: float | None = None


@dataclass(frozen=True)
class Hang:
    """Sleep ``seconds`` (past the client's timeout), then answer ``then``."""

    seconds: float
    then: str = "3"


@dataclass(frozen=True)
class Stall:
    """Send nothing until the client closes the connection (its timeout), or
    ``max_s`` passes; then close without a reply. Bounded, so no test can hang on it."""

    max_s: float = 30.0


@dataclass(frozen=True)
class Drip:
    """Send a valid reply (``then``) one byte every ``interval_s``, as a slow gateway
    does: each read is quick, the whole reply slow. Stops when the client hangs up or
    after ``max_s``, so no test can hang on it."""

    interval_s: float = 2.0
    then: str = "3"
    max_s: float = 60.0


@dataclass(frozen=True)
class RawBody:
    """Reply with these exact bytes (``body``), status and content type: an HTTP 200
    whose body is not JSON, or garbage text served as ``text/plain``."""

    body: str = "<html>upstream proxy error</html>"
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Reset:
    """Reset the TCP connection (RST) after reading the request: no status line at all."""


@dataclass(frozen=True)
class EchoKey:
    """An OpenAI-style error whose message repeats the request's bearer key in full."""

    code: int = 401
    template: str = "Incorrect API key provided: {key}. You can find your API key at ..."


Step = Union[Text, Samples, Logprobs, Status, Hang, Stall, Drip, RawBody, Reset, EchoKey]


@dataclass
class _Rule:
    marker: str
    steps: tuple[Step, ...]
    played: int = 0

    def next_step(self) -> Step:
        step = self.steps[min(self.played, len(self.steps) - 1)]
        self.played += 1
        return step


# --------------------------------------------------------------------------- server


@dataclass
class StubJudgeServer:
    """OpenAI-compatible stub on 127.0.0.1 with a random free port (see module doc)."""

    latency_s: float = 0.0
    time_limit_s: float = 120.0
    logprobs_support: Literal["yes", "refuse", "omit"] = "yes"
    default: tuple[Step, ...] = (Text("3"),)
    max_choices: int | None = None
    serialize: bool = False
    slots: int | None = None
    received: int = 0
    bodies: list[dict] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    #: (request path, Authorization header) of every POST, whatever its path
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._default = _Rule("", tuple(self.default))
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self.max_in_flight = 0
        self._in_flight = 0
        self.arrivals_in_flight: list[int] = []
        # held while answering, when ``serialize`` or ``slots``
        self._serial = threading.BoundedSemaphore(1 if self.serialize else (self.slots or 1))

    # ---- scripting

    def on(self, marker: str, *steps: Step) -> "StubJudgeServer":
        """Requests containing ``marker`` play ``steps`` in order (the last repeats)."""
        if not steps:
            raise ValueError("on(): give at least one step")
        with self._lock:
            self._rules.append(_Rule(marker, tuple(steps)))
        return self

    def set_default(self, *steps: Step) -> None:
        """Steps for requests that match no rule."""
        with self._lock:
            self._default = _Rule("", tuple(steps))

    def reset_counts(self) -> None:
        """Forget served requests (rules keep their position)."""
        with self._lock:
            self.received = 0
            self.bodies.clear()
            self.requests.clear()
            self.statuses.clear()
            self.max_in_flight = 0
            self.arrivals_in_flight.clear()

    def _step_for(self, body: dict) -> Step:
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        with self._lock:
            self.received += 1
            self.bodies.append(body)
            for rule in self._rules:
                if rule.marker in text:
                    return rule.next_step()
            return self._default.next_step()

    # ---- lifecycle

    @property
    def url(self) -> str:
        """Base URL for the ``openai`` client (``.../v1``)."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "StubJudgeServer":
        handler = type("Handler", (_Handler,), {"stub": self})
        httpd = _QuietServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="stub-judge-server", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.time_limit_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def __enter__(self) -> "StubJudgeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _enter_flight(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            self.arrivals_in_flight.append(self._in_flight)

    def _leave_flight(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up (its timeout, a killed test process) is routine here,
    not an error worth a traceback on stderr. The listen backlog is a real server's
    (uvicorn: 2048), not socketserver's 5: with 5, a burst of 8 connections leaves the
    8th waiting for a SYN retransmit (about 1 s), which no test should time."""

    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


# --------------------------------------------------------------------------- responses

_TOKEN_RE = re.compile(r"\s*\d|\s*[A-Za-z]+|\s*[^\sA-Za-z\d]|\s+")


def _tokens(text: str) -> list[str]:
    """Split a reply into pseudo-tokens (each digit alone, as GPT tokenizers do)."""
    return _TOKEN_RE.findall(text) or [text]


def _entry(token: str, prob: float) -> dict:
    return {"token": token, "logprob": math.log(prob) if prob > 0 else -9999.0,
            "bytes": list(token.encode())}


def _text_logprobs(text: str, top: int) -> dict:
    """Logprobs of a deterministic reply: every token has probability 1."""
    content = []
    for tok in _tokens(text):
        e = _entry(tok, 1.0)
        e["top_logprobs"] = [_entry(tok, 1.0)][:max(top, 1)]
        content.append(e)
    return {"content": content}


def _dist_logprobs(step: Logprobs, top: int) -> tuple[str, dict]:
    ranked = sorted(step.dist.items(), key=lambda kv: -kv[1])
    chosen, p = ranked[0]
    content = []
    for tok in step.prefix:
        e = _entry(tok, 1.0)
        e["top_logprobs"] = [_entry(tok, 1.0)]
        content.append(e)
    e = _entry(chosen, p)
    e["top_logprobs"] = [_entry(t, q) for t, q in ranked[:max(top, 1)]]
    content.append(e)
    return "".join(step.prefix) + chosen, {"content": content}


def _completion(body: dict, step: Step, logprobs_support: str, max_choices: int | None = None) -> dict:
    n = int(body.get("n") or 1)
    if max_choices is not None:
        n = min(n, max_choices)
    want_lp = bool(body.get("logprobs")) and logprobs_support == "yes"
    top = int(body.get("top_logprobs") or 0)
    choices = []
    for i in range(n):
        lp = None
        if isinstance(step, Logprobs):
            text, lp = _dist_logprobs(step, top)
        else:
            if isinstance(step, Samples):
                text = step.texts[i % len(step.texts)]
            elif isinstance(step, Hang):
                text = step.then
            else:
                text = step.text  # type: ignore[union-attr]
            lp = _text_logprobs(text, top)
        choice = {"index": i, "message": {"role": "assistant", "content": text},
                  "finish_reason": "stop"}
        choice["logprobs"] = lp if want_lp else None
        choices.append(choice)
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    completion_tokens = sum(len(_tokens(c["message"]["content"])) for c in choices)
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "stub"),
        "choices": choices,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _error(code: int, message: str) -> dict:
    kind = {429: "rate_limit_error", 400: "invalid_request_error"}.get(code, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real endpoints
    stub: StubJudgeServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without NODELAY, Nagle's algorithm
        # and the client's delayed ACK add ~40 ms to every answer (uvicorn sets it too).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._send_raw(code, json.dumps(payload).encode(), "application/json", headers)

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with self.stub._lock:
            self.stub.requests.append((self.path, self.headers.get("Authorization")))
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
            self._send(404, _error(404, f"unknown path {self.path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, _error(400, "body is not JSON"))
            return
        stub = self.stub
        step = stub._step_for(body)
        stub._enter_flight()
        try:
            with stub._serial if stub.serialize or stub.slots else contextlib.nullcontext():
                if stub.latency_s:
                    time.sleep(stub.latency_s)
                self._answer(body, step)
        finally:
            stub._leave_flight()

    def _send_raw(self, code: int, data: bytes, content_type: str,
                  headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to deliver
        with self.stub._lock:
            self.stub.statuses[code] += 1

    def _reset(self) -> None:
        """Close with SO_LINGER 0: the kernel sends RST, the client sees a reset."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        with self.stub._lock:
            self.stub.statuses["reset"] += 1

    def _stall(self, max_s: float) -> None:
        """Wait (bounded) until the client hangs up, then close without answering."""
        deadline = time.monotonic() + max_s
        while time.monotonic() < deadline and self.stub._httpd is not None:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        break  # orderly close by the client: it timed out
                except OSError:
                    break
                time.sleep(0.05)  # unexpected bytes: keep waiting without spinning
        self.close_connection = True
        with self.stub._lock:
            self.stub.statuses["stall"] += 1

    def _drip(self, step: Drip, data: bytes) -> None:
        """Headers at once, then the body byte by byte (bounded by ``step.max_s``)."""
        deadline = time.monotonic() + step.max_s
        self.close_connection = True
        with self.stub._lock:  # counted as it starts: a drip outlives the client's wait
            self.stub.statuses["drip"] += 1
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(data)):
                if time.monotonic() > deadline or self.stub._httpd is None:
                    break
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(step.interval_s)
        except OSError:
            pass  # the client gave up (its deadline): nothing more to deliver

    def _answer(self, body: dict, step: Step) -> None:
        stub = self.stub
        if isinstance(step, Reset):
            self._reset()
            return
        if isinstance(step, Stall):
            self._stall(step.max_s)
            return
        if isinstance(step, Drip):
            self._drip(step, json.dumps(_completion(body, Text(step.then), stub.logprobs_support)).encode())
            return
        if isinstance(step, RawBody):
            self._send_raw(step.status, step.body.encode(), step.content_type)
            return
        if isinstance(step, EchoKey):
            auth = self.headers.get("Authorization") or ""
            key = auth.split(" ", 1)[1] if " " in auth else auth
            self._send(step.code, _error(step.code, step.template.format(key=key)))
            return
        if isinstance(step, Status):
            headers = {"Retry-After": str(step.retry_after)} if step.retry_after is not None else None
            self._send(step.code, _error(step.code, step.message), headers)
            return
        if body.get("logprobs") and stub.logprobs_support == "refuse":
            self._send(400, _error(400, "logprobs is not supported for this model"))
            return
        if isinstance(step, Hang):
            time.sleep(step.seconds)
        self._send(200, _completion(body, step, stub.logprobs_support, stub.max_choices))
