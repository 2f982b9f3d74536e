"""Page bounds for every list the REST API pages with `limit` and `offset`.

ninja's `LimitOffsetPagination` leaves both unbounded by default (`NINJA_PAGINATION_MAX_LIMIT` is infinite), so a
schema-valid `limit=10**30` reached PostgreSQL as an out-of-range bigint: a 500. Subclassing its `Input` keeps ninja's
paging (and its OpenAPI) and states the bounds in the document, where every client sees them, instead of a check by
hand in each view.
"""

from __future__ import annotations

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination

MAX_LIMIT = 200
# Deep enough for any list a person pages through; a larger offset is a scan of the table for nothing.
MAX_OFFSET = 100_000


class BoundedLimitOffset(LimitOffsetPagination):
    class Input(Schema):
        limit: int = Field(100, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_limit=MAX_LIMIT, **kwargs)
