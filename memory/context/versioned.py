"""The versioned append both the curated profile and the handoff are kept with: every change is a new numbered row,
the edit names the version it was made against (an optimistic lock), and history is never rewritten."""

from __future__ import annotations

from collections.abc import Callable

from django.db import IntegrityError, transaction

from palace.errors import Conflict, InvalidInput


def append_version[Row](
    *,
    expected_version: int | None,
    current_number: Callable[[], int],
    stale: Callable[[int], Conflict],
    write: Callable[[int], Row],
    first: str,
) -> Row:
    """Append the next version, or raise `stale(expected)` when the caller's version is not the current one.

    1. `expected_version` is the version the change was made against (0 before the `first` one; None: no check).
    2. In one transaction: read the current number, compare, and `write(number)` the row numbered number + 1 with
       its op row.
    3. Two writers that read the same number collide on the (…, version) unique constraint: the second gets the
       same Conflict as a stale caller, never a second row with that number.
    """
    if expected_version is not None and expected_version < 0:
        raise InvalidInput(f"expected_version is 0 or more (0 before the first {first})", field="expected_version")
    number = 0
    try:
        with transaction.atomic():
            number = current_number()
            if expected_version is not None and expected_version != number:
                raise stale(expected_version)
            return write(number)
    except IntegrityError:
        # Another change took this version number between our read and our insert: the lock did its job.
        raise stale(number if expected_version is None else expected_version) from None


def version_detail(*, version: int, from_version: int, **extra: object) -> dict[str, object]:
    """The op row's detail of an appended version: its number, the one it followed, and each extra that says
    something (None and empty lists are left out)."""
    return {"version": version, "from_version": from_version, **{k: v for k, v in extra.items() if v not in (None, [])}}
