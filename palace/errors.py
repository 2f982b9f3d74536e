"""The one hierarchy of domain errors. Doors (REST, MCP, panel) map these once each."""

from __future__ import annotations


class AtriumError(Exception):
    code = "error"
    status = 400

    def __init__(self, message: str, **detail: object) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class NotFound(AtriumError):
    """Also used for things the caller may not see: invisible and nonexistent answer alike."""

    code = "not_found"
    status = 404


class PermissionDenied(AtriumError):
    """The caller can see the palace but may not do this (a viewer writing, a read token writing)."""

    code = "forbidden"
    status = 403


class InvalidInput(AtriumError):
    code = "invalid"
    status = 422


class Conflict(AtriumError):
    code = "conflict"
    status = 409


class Throttled(AtriumError):
    """Too many of one action in a short time; the message says when to try again."""

    code = "throttled"
    status = 429
