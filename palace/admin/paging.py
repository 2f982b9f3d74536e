"""The audit console at a year's size (issue 29, `atrium bench ledger`): a page of the op log must not cost a pass
over the whole ledger. Measured with 871,000 op rows (50 people, 365 days): the changelist took 450 ms, nearly all
of it in two whole-table reads the admin makes on every page, the paginator's COUNT(*) and the date drill-down's
SELECT DISTINCT date_trunc('year', created_at). The trail itself (a top-N by the created_at index) took 4 ms.

- LedgerPaginator: with no filter, the row count is PostgreSQL's own estimate (pg_class.reltuples of the op log's
  partitions, kept by ANALYZE and autovacuum) once the table is past ESTIMATE_FROM rows; below that, and for any
  filtered list, the exact count.
- LedgerQuerySet.datetimes: the drill-down's years, months or days found by one EXISTS per period between the first
  and the last row (each a short range scan of the created_at index) instead of DISTINCT over every row.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Max, Min, QuerySet
from django.utils import timezone
from django.utils.functional import cached_property

from palace.models import OpLog
from palace.oplog import oplog_rows_estimate

ESTIMATE_FROM = 100_000


class LedgerPaginator(Paginator):
    # True once `count` answered with the estimate: the console then says the total is one (never a bare guess).
    estimated = False

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet) and not rows.query.where:
            estimate = oplog_rows_estimate(rows.db)
            if estimate >= ESTIMATE_FROM:
                self.estimated = True
                return estimate
        return int(super().count)


def _start(moment: datetime, kind: str) -> datetime:
    if kind == "year":
        return moment.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    if kind == "month":
        return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _next(start: datetime, kind: str) -> datetime:
    if kind == "year":
        return start.replace(year=start.year + 1)
    if kind == "month":
        return start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
    return _start(start + timedelta(days=1, hours=2), "day")  # past a DST change, then back to midnight


class LedgerQuerySet(QuerySet[OpLog]):
    def datetimes(self, field_name: str, kind: Any, order: Any = "ASC", tzinfo: Any = None) -> Any:
        if field_name != "created_at" or kind not in ("year", "month", "day"):
            return super().datetimes(field_name, kind, order=order, tzinfo=tzinfo)
        span = self.aggregate(first=Min(field_name), last=Max(field_name))
        if span["first"] is None:
            return []
        zone = tzinfo or timezone.get_current_timezone()
        start, last = _start(span["first"].astimezone(zone), kind), span["last"].astimezone(zone)
        periods = []
        while start <= last:
            end = _next(start, kind)
            if self.filter(created_at__gte=start, created_at__lt=end).exists():
                periods.append(start)
            start = end
        return periods if order == "ASC" else periods[::-1]
