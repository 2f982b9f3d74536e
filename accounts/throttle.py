"""The failure limit django-axes applies to a login attempt (settings.AXES_FAILURE_LIMIT names this function).

Axes counts failures per lockout parameter set (here: one user name from one address, and one address whatever
the user name) and compares the largest count with a single limit. One limit for both would lock a whole office
behind one NAT address after a handful of typos, or let a password spray across many user names run at the
per-user rate; so the limit answered here is the per-(user, address) one once that pair has reached it, and the
larger per-address one otherwise. Locked, therefore, exactly when the pair reached ATRIUM_LOGIN_FAILURE_LIMIT or
the address reached ATRIUM_LOGIN_IP_FAILURE_LIMIT.
"""

from __future__ import annotations

from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest

__all__ = ["login_failure_limit"]


def login_failure_limit(request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
    pair_limit: int = settings.ATRIUM_LOGIN_FAILURE_LIMIT
    address_limit: int = max(settings.ATRIUM_LOGIN_IP_FAILURE_LIMIT, pair_limit)
    username = get_client_username(request, credentials)
    address = getattr(request, "axes_ip_address", None)
    if username is None or address is None:
        return pair_limit
    attempts = AccessAttempt.objects.filter(
        username=username, ip_address=address, attempt_time__gte=get_cool_off_threshold(request)
    )
    pair_failures = attempts.aggregate(n=Sum("failures_since_start"))["n"] or 0
    return pair_limit if pair_failures >= pair_limit else address_limit
