"""What an agent is handed at the start of a session: the standing profile built from memories
(standing_profile.py), the curated profile people write (curated_profile.py), the handoff of where work stopped
(handoff.py) and the bootstrap block that joins them (bootstrap.py); the two edited texts are kept as versions
(versioned.py)."""

from __future__ import annotations

from memory.context.bootstrap import (
    BOOTSTRAP_MIN_TOKEN_BUDGET,
    BOOTSTRAP_TOKEN_BUDGET,
    Bootstrap,
    bootstrap_build,
    bootstrap_render,
)
from memory.context.curated_profile import (
    CURATED_HISTORY_LIMIT,
    MAX_PROFILE_CHARS,
    DiffLine,
    curated_block,
    curated_checkout,
    curated_current,
    curated_diff,
    curated_edit,
    curated_get,
    curated_history,
    curated_text,
)
from memory.context.handoff import (
    HANDOFF_HISTORY_LIMIT,
    MAX_DOING_CHARS,
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    HandoffInput,
    handoff_checkout,
    handoff_current,
    handoff_get,
    handoff_history,
    handoff_render,
    handoff_save,
)
from memory.context.standing_profile import StandingProfile, standing_profile_build

__all__ = [
    "BOOTSTRAP_MIN_TOKEN_BUDGET",
    "BOOTSTRAP_TOKEN_BUDGET",
    "CURATED_HISTORY_LIMIT",
    "HANDOFF_HISTORY_LIMIT",
    "MAX_DOING_CHARS",
    "MAX_ITEMS",
    "MAX_ITEM_CHARS",
    "MAX_PROFILE_CHARS",
    "Bootstrap",
    "DiffLine",
    "HandoffInput",
    "StandingProfile",
    "bootstrap_build",
    "bootstrap_render",
    "curated_block",
    "curated_checkout",
    "curated_current",
    "curated_diff",
    "curated_edit",
    "curated_get",
    "curated_history",
    "curated_text",
    "handoff_checkout",
    "handoff_current",
    "handoff_get",
    "handoff_history",
    "handoff_render",
    "handoff_save",
    "standing_profile_build",
]
