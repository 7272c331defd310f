"""The network guard of a hub pull: its limits (a byte's wait, a file's time, the whole
pull's deadline, the longest ``Retry-After``) and its stop event, enforced on every request
and every chunk inside the `huggingface_hub` client's own transport.

Imports of `huggingface_hub` and `httpx2` stay inside functions: ``mdad --help`` loads
neither.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from mdad.errors import ConfigError, DataError

API_BODY_CAP = 64 << 20  # the most an answer of the hub's API may hold (a listing page)
# Defaults of the pull's limits (seconds): a read that waits a minute for a byte has
# lost its connection; 30 minutes is a 500 MB samples file at 280 kB/s; the hub's own
# Retry-After is seconds to a minute, and a longer one means "come back later".
IDLE_TIMEOUT = 60.0
FILE_TIMEOUT = 1800.0
MAX_RETRY_AFTER = 60.0
SUPPORTED_HUB = "2.x"  # the huggingface_hub releases whose client internals the guard wraps


@dataclass(frozen=True)
class Limits:
    """How long a pull waits (seconds; None: no limit): for a byte (`idle_timeout`),
    for one file over its attempts (`file_timeout`), in all (`deadline`), and at most
    what a ``Retry-After`` asks (`max_retry_after`; a longer one fails the file)."""

    idle_timeout: float = IDLE_TIMEOUT
    file_timeout: float | None = FILE_TIMEOUT
    deadline: float | None = None
    max_retry_after: float = MAX_RETRY_AFTER


class Final(DataError):
    """A file cannot be read and another attempt would not help: a limit fired."""


class Stopped(Exception):
    """The pull is stopping (Ctrl-C, SIGTERM, its deadline, a fatal error)."""


_CONTEXT = threading.local()  # the `Budget` of what this thread is reading


@dataclass
class Budget:
    """What a thread reads now: its name (for errors), the most bytes its files' bodies
    may hold, and the monotonic time it must be read by."""

    what: str
    limit: int
    deadline: float | None


@contextmanager
def reading(what: str, limit: int, deadline: float | None) -> Iterator[Budget]:
    """Within the block, this thread's requests read `what`: bodies of at most `limit`
    bytes, done by `deadline` (monotonic seconds; None: no limit). Outside any block a
    request is an API call, capped at `API_BODY_CAP`."""
    budget = Budget(what, limit, deadline)
    _CONTEXT.budget = budget
    try:
        yield budget
    finally:
        _CONTEXT.budget = None


def work_for(guard: Guard) -> None:
    """Mark this thread as a worker of `guard`'s pull: once that pull has ended, the
    thread's next request stops, even in a later pull's client."""
    _CONTEXT.guard = guard


class Guard:
    """A pull's limits and its stop event, checked on every request and every chunk
    the hub client reads (`_GuardedTransport`)."""

    def __init__(self, limits: Limits, stop: threading.Event) -> None:
        self.limits, self.stop = limits, stop
        self.deadline = (None if limits.deadline is None
                         else time.monotonic() + limits.deadline)

    def file_deadline(self) -> float | None:
        timeout = self.limits.file_timeout
        return None if timeout is None else time.monotonic() + timeout

    def check(self, budget: Budget) -> None:
        if self.stop.is_set() or (self.deadline is not None
                                  and time.monotonic() >= self.deadline):
            raise Stopped()
        if budget.deadline is not None and time.monotonic() >= budget.deadline:
            raise self.file_late(budget)

    def file_late(self, budget: Budget) -> Final:
        return Final(f"{budget.what}: not read within file_timeout "
                      f"({self.limits.file_timeout:g} s; the hub sends it too slowly); "
                      "pull again later, or raise file_timeout")

    def wait(self, budget: Budget) -> float:
        """The socket timeout of a request: the idle timeout, or less when a deadline
        comes sooner."""
        wait = self.limits.idle_timeout
        for deadline in (budget.deadline, self.deadline):
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.01))
        return wait

    def timed_out(self, budget: Budget) -> Exception:
        now = time.monotonic() + 0.01
        if budget.deadline is not None and now >= budget.deadline:
            return self.file_late(budget)
        if self.deadline is not None and now >= self.deadline:
            return Stopped()
        return Final(f"{budget.what}: no data from the hub for "
                      f"{self.limits.idle_timeout:g} s (idle_timeout); check the network, "
                      "or raise idle_timeout")


# The statuses huggingface_hub 2.x retries by default (`utils._http`'s
# `_DEFAULT_RETRY_ON_STATUS_CODES`), sleeping what the answer asks before each retry.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def asked_wait(response: Any) -> float | None:
    """Seconds the hub client would sleep, by the answer's headers, before it retries
    `response` (its `_http_backoff_base` rule, mirrored): for a status it retries
    (`RETRIED_STATUSES`), a 429's ``RateLimit`` header with ``r=0`` (its ``t=N``) first,
    else a ``Retry-After`` of whole seconds (the first header of that name, any case).
    None when the status is not retried or no header asks (the client then backs off
    1 to 8 s). The client adds 1 s to what is asked; the value here is what is asked.

    Raises
    ------
    Final
        For a ``Retry-After`` of digits that are no number Python reads (``²``, or more
        than 4300 of them): the client would fail on it with a ValueError.
    """
    asked = _asked(response)
    return None if asked is None else asked[0]


def _asked(response: Any) -> tuple[float, str] | None:
    """(seconds, the header that asks them) of `asked_wait`."""
    if response.status_code not in RETRIED_STATUSES:
        return None
    headers = response.headers
    if response.status_code == 429:
        from huggingface_hub.utils import parse_ratelimit_headers

        info = parse_ratelimit_headers(headers)
        if info is not None and info.remaining == 0:
            return float(info.reset_in_seconds), "RateLimit"
    value = next((headers[key] for key in headers if key.lower() == "retry-after"), None)
    value = (value or "").strip()
    if not value.isdigit():
        return None  # an HTTP date, which the client does not honour either
    try:
        return float(int(value)), "Retry-After"
    except ValueError:
        raise Final(f"the hub's answer {response.status_code} asks to wait an unreadable "
                    f"Retry-After ({value[:40]!a}); pull again later") from None


def _guarded_transport(inner: Any, guard: Guard) -> Any:
    import httpx2

    class GuardedStream(httpx2.SyncByteStream):
        def __init__(self, stream: Any, budget: Budget, limit: int) -> None:
            self.stream, self.budget, self.limit = stream, budget, limit
            self.seen = 0

        def __iter__(self) -> Iterator[bytes]:
            chunks = iter(self.stream)
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                except httpx2.TimeoutException:
                    raise guard.timed_out(self.budget) from None
                self.seen += len(chunk)
                if self.seen > self.limit:
                    raise Final(f"{self.budget.what}: the hub sent more than the "
                                 f"{self.limit:,} bytes it lists; not read further")
                guard.check(self.budget)
                yield chunk

        def close(self) -> None:
            self.stream.close()

    class GuardedTransport(httpx2.BaseTransport):
        def handle_request(self, request: Any) -> Any:
            budget = getattr(_CONTEXT, "budget", None) or Budget(
                f"the hub's answer to {request.url.path}", API_BODY_CAP, None)
            # a worker left reading by an ended pull stops here, not in this pull's client
            getattr(_CONTEXT, "guard", guard).check(budget)
            guard.check(budget)
            wait = guard.wait(budget)
            request.extensions = {**request.extensions, "timeout": {
                "connect": wait, "read": wait, "write": wait, "pool": wait}}
            try:
                response = inner.handle_request(request)
            except httpx2.TimeoutException:
                raise guard.timed_out(budget) from None
            try:  # the client would sleep what is asked, deaf to the stop and deadlines
                asked = _asked(response)
            except Final as exc:
                response.close()
                raise Final(f"{budget.what}: {exc}") from None
            if asked is not None and asked[0] > guard.limits.max_retry_after:
                response.close()
                raise Final(f"{budget.what}: the hub asked to wait {asked[0]:g} s before "
                             f"trying again ({asked[1]}, HTTP {response.status_code}), more "
                             "than max_retry_after "
                             f"({guard.limits.max_retry_after:g} s); pull again later, or "
                             "raise max_retry_after")
            limit = API_BODY_CAP
            if "/resolve/" in request.url.path:  # a file: its listed size, from the Range
                start = request.headers.get("Range", "").removeprefix("bytes=")
                start = start.split("-")[0]
                limit = budget.limit - (int(start) if start.isdigit() else 0)
            response.stream = GuardedStream(response.stream, budget, limit)
            return response

        def close(self) -> None:
            inner.close()

    return GuardedTransport()


@contextmanager
def guarded_hub(guard: Guard) -> Iterator[None]:
    """Within the block, every request of `huggingface_hub` (one client for the
    process) goes through the guard; the client factory in use before comes back after.

    The hub client has no timeout of its own on API calls, streams a file with a
    per-read timeout only (``HF_HUB_DOWNLOAD_TIMEOUT``, 10 s: a body fed a byte every
    2 s never trips it) and sleeps whatever ``Retry-After`` (or a 429's ``RateLimit``)
    asks on a 408, 429, 500, 502, 503 or 504 (`asked_wait`); its one hook is the
    client factory, so the guard wraps the transports of the client it makes.
    """
    try:  # its private parts: another release may lack them (see `_unsupported`)
        from huggingface_hub.utils import _http, get_session, set_client_factory

        previous = _http._GLOBAL_CLIENT_FACTORY  # the hub client's own, or the user's
    except (ImportError, AttributeError):
        raise _unsupported("huggingface_hub.utils._http._GLOBAL_CLIENT_FACTORY and "
                           "set_client_factory") from None

    def factory() -> Any:
        client = previous()
        try:
            transport, mounts = client._transport, client._mounts
        except AttributeError:
            with suppress(Exception):  # a client of unknown make: closing it may fail too
                client.close()
            raise _unsupported("the httpx2 Client's _transport and _mounts") from None
        client._transport = _guarded_transport(transport, guard)
        client._mounts = {pattern: None if transport is None
                          else _guarded_transport(transport, guard)
                          for pattern, transport in mounts.items()}
        return client

    set_client_factory(factory)  # closes the client in use: the next call makes ours
    try:
        get_session()  # ours, made here: a client the guard cannot wrap fails in this thread
        yield
    finally:
        set_client_factory(previous)  # closing ours ends the reads still in it


def _unsupported(missing: str) -> ConfigError:
    """The one-line error when the installed `huggingface_hub` lacks the private parts
    the guard wraps (`missing`): the hub client offers no public hook for a transport."""
    from huggingface_hub import __version__

    return ConfigError(f"the pull guards the Hugging Face Hub client through {missing}, "
                       f"which the installed huggingface_hub {__version__} lacks; mdad "
                       f"supports huggingface_hub {SUPPORTED_HUB}: install it with "
                       "pip install 'huggingface_hub>=2,<3'")
