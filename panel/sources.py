"""The services the panel calls, built by other parts of Atrium. Each is looked up when called, so a page can say
honestly that a capability has not landed (`Unavailable`) instead of inventing figures."""

from __future__ import annotations

import importlib
from typing import Any


class Unavailable(Exception):
    """The service behind this part of a page does not exist (yet) in this installation."""


def service(module: str, name: str) -> Any:
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        found = None
    if found is None:
        raise Unavailable(f"{module}.{name}")
    return found


def available(module: str, name: str) -> bool:
    try:
        service(module, name)
    except Unavailable:
        return False
    return True


def review_due_count(*, user: Any, palaces: list[Any], now: Any) -> int:
    count = service("review.selectors", "review_due_count")
    return int(count(user=user, palace_ids=[p.pk for p in palaces], now=now))


def review_due_ids(*, user: Any, palaces: list[Any], now: Any) -> list[int]:
    """The due memories (the review queue's cap, 200, is the filter's cap too)."""
    due_ids = service("review.selectors", "review_due_ids")
    return list(due_ids(user=user, palace_ids=[p.pk for p in palaces], now=now, limit=200))


def memory_search(**kwargs: Any) -> Any:
    return service("memory.search", "memory_search")(**kwargs)


def memory_update(*, memory: Any, actor: Any, content: str, placard: str | None, expected_version: int | None) -> Any:
    update = service("memory.services", "memory_update")
    return update(
        memory_id=memory.pk,
        actor=actor,
        content=content,
        placard=placard,
        expected_version=expected_version,
        source="panel",
    )


def memory_forget(*, memory: Any, actor: Any, reason: str) -> Any:
    return service("memory.services", "memory_forget")(memory=memory, actor=actor, reason=reason)


def memory_restore(*, memory: Any, actor: Any) -> Any:
    return service("memory.services", "memory_restore")(memory=memory, actor=actor)


def room_directory_head(*, palace: Any) -> list[Any]:
    return list(service("memory.corridor", "room_directory_head")(palace=palace))


def room_directory_page(*, palace: Any, kind: str, after: int | None) -> tuple[list[Any], int | None]:
    return service("memory.corridor", "room_directory_page")(palace=palace, kind=kind, after=after)


def refurb_list(*, palace: Any, limit: int) -> Any:
    return service("memory.placard_scan", "refurb_list")(palace=palace, limit=limit)


def neighbours(*, memory: Any, hops: int) -> list[Any]:
    return list(service("memory.corridor", "neighbours")(memory=memory, hops=hops))


def review_queue(*, user: Any, palaces: list[Any], now: Any, limit: int) -> list[Any]:
    queue = service("review.selectors", "review_queue")
    return list(queue(user=user, palace_ids=[p.pk for p in palaces], now=now, limit=limit))


def review_reveal(*, memory: Any, user: Any, now: Any) -> Any:
    return service("review.services", "review_reveal")(memory_id=memory.pk, user=user, now=now)


def review_grade(*, memory: Any, grade: int, actor: Any, now: Any) -> Any:
    return service("review.services", "review_grade")(memory=memory, grade=grade, actor=actor, now=now)
