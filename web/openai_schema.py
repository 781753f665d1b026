"""The OpenAI-compatible endpoints in the OpenAPI document (``/api/schema/``).

They are async Django views, not DRF views, so drf-spectacular does not find them; this
post-processing hook (``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``) writes them in.
"""

from __future__ import annotations

from typing import Any

from web.openai_wire import EXTENSION_FIELD, MAX_CONTENT_CHARS, SESSION_HEADER

_ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "message": {"type": "string"},
                "type": {
                    "type": "string",
                    "enum": ["invalid_request_error", "authentication_error", "server_error"],
                },
                "param": {"type": "string", "nullable": True},
                "code": {"type": "string"},
            },
            "required": ["message", "type", "param", "code"],
        }
    },
}

_MESSAGE = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {
            "oneOf": [
                {"type": "string"},
                {"type": "array", "items": {"type": "object"}},
                {"type": "null"},
            ]
        },
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
    },
    "required": ["role"],
}

_REQUEST = {
    "type": "object",
    "properties": {
        "model": {"type": "string", "description": "An agent's name or id (GET /v1/models)."},
        "messages": {
            "type": "array",
            "items": _MESSAGE,
            "minItems": 1,
            "description": (
                "The last one is the user's message the agent answers (at most "
                f"{MAX_CONTENT_CHARS} characters); the earlier ones are the conversation so "
                "far: a new chat's history, or how a stateless client's chat is recognised."
            ),
        },
        "stream": {"type": "boolean", "default": False},
        "stream_options": {
            "type": "object",
            "properties": {"include_usage": {"type": "boolean"}},
        },
        EXTENSION_FIELD: {
            "type": "object",
            "properties": {"sessionId": {"type": "string", "format": "uuid"}},
            "description": f"The chat to continue (or the {SESSION_HEADER} header).",
        },
    },
    "required": ["model", "messages"],
}

_USAGE = {
    "type": "object",
    "properties": {
        "prompt_tokens": {"type": "integer"},
        "completion_tokens": {"type": "integer"},
        "total_tokens": {"type": "integer"},
    },
}

_COMPLETION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["chat.completion"]},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer"},
                    "message": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string", "enum": ["assistant"]},
                            "content": {"type": "string"},
                        },
                    },
                    "finish_reason": {"type": "string", "enum": ["stop", "length"]},
                },
            },
        },
        "usage": _USAGE,
        EXTENSION_FIELD: {
            "type": "object",
            "properties": {
                "sessionId": {"type": "string", "format": "uuid"},
                "createdChat": {"type": "boolean"},
            },
        },
    },
}


def _errors(*codes: tuple[str, str]) -> dict[str, Any]:
    return {
        status: {
            "description": what,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/OpenAIError"}}
            },
        }
        for status, what in codes
    }


_SESSION = {
    "name": SESSION_HEADER,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "format": "uuid"},
    "description": "The chat to continue; every answer names its chat in this header too.",
}

PATHS: dict[str, Any] = {
    "/v1/chat/completions": {
        "post": {
            "operationId": "openai_chat_completions",
            "tags": ["openai"],
            "summary": "Run an agent's turn, OpenAI chat-completions format",
            "description": (
                "Runs the agent named by `model` (tools, compaction, recall) in a chat of the "
                "token's user and answers as a `chat.completion`, or with `stream: true` as "
                "server-sent `chat.completion.chunk` events ending `data: [DONE]`. README: "
                '"Using NetaClaw\'s agents from other clients".'
            ),
            "security": [{"openaiBearer": []}],
            "parameters": [_SESSION],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": "#/components/schemas/OpenAIChatRequest"}
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "The answer (or its event stream)",
                    "content": {
                        "application/json": {
                            "schema": {"$ref": "#/components/schemas/OpenAIChatCompletion"}
                        },
                        "text/event-stream": {"schema": {"type": "string"}},
                    },
                },
                **_errors(
                    ("400", "A bad body, or a chat of another agent"),
                    ("401", "No valid API token (Authorization: Bearer <token>)"),
                    ("404", "An agent or a chat the user may not use"),
                    ("409", "A turn or a compaction already runs in that chat"),
                    ("413", "The body is too large"),
                    ("422", "The agent cannot answer (no model channel, prompt too long)"),
                    ("502", "The agent's model provider failed"),
                    ("503", "The turn's runner stopped under it; the chat answers it again"),
                ),
            },
        }
    },
    "/v1/models": {
        "get": {
            "operationId": "openai_models",
            "tags": ["openai"],
            "summary": "The agents the token's user may use, as OpenAI models",
            "security": [{"openaiBearer": []}],
            "responses": {
                "200": {"description": "`{object: list, data: [{id, object: model, ...}]}`"},
                **_errors(("401", "No valid API token")),
            },
        }
    },
}


def add_openai_paths(result: dict[str, Any], generator: Any, request: Any, public: Any) -> Any:
    """drf-spectacular's post-processing hook: the two paths and their shapes."""
    result.setdefault("paths", {}).update(PATHS)
    components = result.setdefault("components", {})
    components.setdefault("schemas", {}).update(
        OpenAIError=_ERROR, OpenAIChatRequest=_REQUEST, OpenAIChatCompletion=_COMPLETION
    )
    components.setdefault("securitySchemes", {})["openaiBearer"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "The user's API token (POST /api/auth/token/).",
    }
    return result
