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


class AwaitingApproval(AtriumError):
    """A new project waits for an operator (ATRIUM_PROJECT_APPROVAL): the person's request is recorded, nothing else
    happened. Its own class, not a NotFound: the doors that word a missing project their own way (MCP) pass it on."""

    code = "awaiting_approval"
    status = 403

    @classmethod
    def for_origin(cls, origin_key: str, *, requested: str) -> AwaitingApproval:
        return cls(
            f"project {origin_key} awaits an operator's approval (requested {requested}); until then use your "
            'personal palace (project "personal") or a project you are a member of',
            field="project",
            origin=origin_key,
        )
