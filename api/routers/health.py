from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router

from ops.health import health_report

router = Router(tags=["health"])


@router.get("", auth=None)
def health(request: HttpRequest) -> dict[str, Any]:
    """Measured health of every part. `ok` is true, false, or null (unknown, with a reason)."""
    return health_report()
