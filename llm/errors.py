"""One error type for every provider failure, with a reason callers can branch on.

The SDKs raise dozens of classes (and raw ``httpx2`` errors while a stream is being
read); callers only need to know *why* (retry later? fix the key? give up?) and a
message they can show a user. The message never contains the API key.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import aiohttp
import anthropic
import httpx2
import openai

LLMErrorReason = Literal[
    "timeout",
    "rate_limited",
    "upstream_error",
    "invalid_response",
    "connection_error",
    "auth_error",
    "bad_request",
    "context_too_long",
]

_MAX_DETAIL = 300
_REDACTED = "***"

# The head of each error's text, in English; ``agents.reasons`` translates the same words for
# the pages (a test holds the two equal).
_DESCRIPTIONS: dict[str, str] = {
    "timeout": "The model did not answer in time",
    "rate_limited": "The model provider is rate limiting requests",
    "upstream_error": "The model provider failed",
    "invalid_response": "The model provider sent a response that could not be read",
    "connection_error": "Could not connect to the model provider",
    "auth_error": "The model provider refused the API key",
    "bad_request": "The model provider rejected the request",
    "context_too_long": "The conversation is too long for the model's context window",
}

# The provider's own "the request does not fit the context window": OpenAI's
# ``context_length_exceeded`` code (and the OpenAI-compatible servers' wording: DeepSeek,
# vLLM, llama.cpp's ``exceed_context_size_error``), Anthropic's "prompt is too long". A
# compaction helps with these, unlike with any other rejected request.
_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_CONTEXT_WORDS = re.compile(
    r"prompt is too long|maximum context length|context[ _]length[ _]exceeded"
    r"|exceeds? the (?:available )?context (?:size|window|length)"
    r"|input exceeds the context window|too many tokens in (?:the )?(?:prompt|request)",
    re.IGNORECASE,
)

# Error types (or OpenAI codes) carried in a body: an error that arrives mid-stream,
# after a 200 (Anthropic ``event: error``, an OpenAI ``data: {"error": …}`` chunk).
_BODY_TYPES: dict[str, LLMErrorReason] = {
    "rate_limit_error": "rate_limited",
    "rate_limit_exceeded": "rate_limited",
    "insufficient_quota": "rate_limited",
    "invalid_api_key": "auth_error",
    "authentication_error": "auth_error",
    "permission_error": "auth_error",
    "invalid_request_error": "bad_request",
    "not_found_error": "bad_request",
    "request_too_large": "bad_request",
    "timeout_error": "timeout",
}


class LLMError(Exception):
    """A failed LLM call: ``reason`` says why, ``status`` is the HTTP status if any.

    ``cause`` names the original exception class (for logs); the original itself is
    not chained, because SDK exceptions carry the request, its headers and the raw
    body, any of which may hold the key.
    """

    def __init__(
        self,
        reason: LLMErrorReason,
        message: str | None = None,
        *,
        status: int | None = None,
        provider: str | None = None,
        cause: str | None = None,
    ) -> None:
        if reason not in _DESCRIPTIONS:
            raise ValueError(f"Unknown LLMError reason {reason!r}.")
        self.reason: LLMErrorReason = reason
        self.status = status
        self.provider = provider
        self.cause = cause
        self.message = message or f"{_DESCRIPTIONS[reason]}."
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        """Picklable despite keyword-only arguments (worker processes, test runners)."""
        return (
            _rebuild,
            (self.reason, self.message, self.status, self.provider, self.cause),
        )

    def __repr__(self) -> str:
        return f"LLMError(reason={self.reason!r}, status={self.status!r}, message={self.message!r})"


def _rebuild(
    reason: LLMErrorReason,
    message: str,
    status: int | None,
    provider: str | None,
    cause: str | None,
) -> LLMError:
    return LLMError(reason, message, status=status, provider=provider, cause=cause)


def redact(text: str, secret: str) -> str:
    """``text`` with every occurrence of ``secret`` masked (no-op for an empty secret)."""
    if not secret:
        return text
    return text.replace(secret, _REDACTED)


def _reason_for_status(status: int) -> LLMErrorReason:
    if status in (401, 403):
        return "auth_error"
    if status == 429:
        return "rate_limited"
    if status == 408:
        return "timeout"
    if 400 <= status < 500:
        return "bad_request"
    return "upstream_error"


def _detail(exc: BaseException) -> str:
    """The upstream's own explanation, short: for a status error its ``error.message``."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()
    return str(exc)


def _is_context_overflow(exc: BaseException, detail: str) -> bool:
    """The provider says the request is longer than the model's context window."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        codes = [body.get("type"), body.get("code")]
        if isinstance(error, dict):
            codes += [error.get("type"), error.get("code")]
        if any(isinstance(c, str) and c in _CONTEXT_CODES for c in codes):
            return True
    return bool(_CONTEXT_WORDS.search(detail))


def _reason_for_body(exc: BaseException) -> LLMErrorReason:
    """The reason an error body names (its ``type`` or ``code``), else upstream_error."""
    body = getattr(exc, "body", None)
    if not isinstance(body, dict):
        return "upstream_error"
    error = body.get("error")
    candidates = [body.get("type"), body.get("code")]
    if isinstance(error, dict):
        candidates[:0] = [error.get("type"), error.get("code")]
    for candidate in candidates:
        if isinstance(candidate, str) and candidate in _BODY_TYPES:
            return _BODY_TYPES[candidate]
    return "upstream_error"


def _compose(reason: LLMErrorReason, status: int | None, detail: str, api_key: str) -> str:
    head = _DESCRIPTIONS[reason]
    if status is not None:
        head = f"{head} (HTTP {status})"
    detail = redact(" ".join(detail.split()), api_key)
    if len(detail) > _MAX_DETAIL:
        detail = detail[: _MAX_DETAIL - 1] + "…"
    return f"{head}: {detail}" if detail else f"{head}."


def _broken_connection(exc: BaseException) -> BaseException | None:
    """The aiohttp connection failure behind ``exc`` that is no timeout, if any.

    The SDKs' aiohttp transport maps every ``aiohttp.ClientConnectionError`` it does not
    know better to ``ConnectTimeout``: a refused or dropped connection would read as a
    timeout to the user."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, aiohttp.ClientConnectionError) and not isinstance(
            current, asyncio.TimeoutError
        ):
            return current
        current = current.__cause__ or current.__context__
    return None


def to_llm_error(
    exc: BaseException, *, api_key: str = "", provider: str | None = None
) -> LLMError | None:
    """Translate an SDK / transport / decoding exception; None if it is not one of those.

    Unknown exceptions (bugs) are not swallowed: the caller re-raises them as they are.
    """
    if isinstance(exc, LLMError):
        return exc
    reason: LLMErrorReason
    status: int | None = None
    detail = ""
    broken = _broken_connection(exc)
    if broken is not None:
        reason, detail = "connection_error", type(broken).__name__
    elif isinstance(
        exc, anthropic.APITimeoutError | openai.APITimeoutError | httpx2.TimeoutException
    ):
        reason = "timeout"
    elif isinstance(exc, anthropic.APIConnectionError | openai.APIConnectionError):
        reason = "connection_error"
        cause = exc.__cause__
        detail = type(cause).__name__ if cause is not None else ""
    elif isinstance(exc, httpx2.DecodingError):
        reason, detail = "invalid_response", str(exc)
    elif isinstance(exc, httpx2.TransportError):
        reason, detail = "connection_error", f"{type(exc).__name__}: {exc}"
    elif isinstance(exc, anthropic.APIResponseValidationError | openai.APIResponseValidationError):
        reason, status, detail = "invalid_response", exc.status_code, str(exc)
    elif isinstance(exc, anthropic.APIStatusError | openai.APIStatusError):
        status = exc.status_code
        detail = _detail(exc)
        if status in (400, 413) and _is_context_overflow(exc, detail):
            reason = "context_too_long"
        elif status >= 400:
            reason = _reason_for_status(status)
        else:  # an error event inside a 200 stream
            reason = _reason_for_body(exc)
            status = None
            if reason in ("bad_request", "upstream_error") and _is_context_overflow(exc, detail):
                reason = "context_too_long"
    elif isinstance(exc, anthropic.APIError | openai.APIError):
        reason, detail = _reason_for_body(exc), _detail(exc)
        if reason in ("bad_request", "upstream_error") and _is_context_overflow(exc, detail):
            reason = "context_too_long"
    elif isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
        reason, detail = "invalid_response", f"{type(exc).__name__}: {exc}"
    elif isinstance(exc, anthropic.AnthropicError | openai.OpenAIError):
        reason, detail = "upstream_error", str(exc)
    else:
        return None
    return LLMError(
        reason,
        _compose(reason, status, detail, api_key),
        status=status,
        provider=provider,
        cause=type(exc).__name__,
    )


@contextmanager
def translate_errors(*, api_key: str, provider: str) -> Iterator[None]:
    """Re-raise SDK failures inside the block as LLMError (works around ``yield`` too)."""
    try:
        yield
    except LLMError:
        raise
    except Exception as exc:
        error = to_llm_error(exc, api_key=api_key, provider=provider)
        if error is None:
            raise
        raise error from None


@contextmanager
def malformed_is_invalid(provider: str) -> Iterator[None]:
    """A response missing the fields we read is the provider's fault: invalid_response."""
    try:
        yield
    except (AttributeError, KeyError, TypeError, IndexError, ValueError) as exc:
        raise LLMError(
            "invalid_response",
            f"{_DESCRIPTIONS['invalid_response']}.",  # the exception's name only in ``cause``
            provider=provider,
            cause=type(exc).__name__,
        ) from None
