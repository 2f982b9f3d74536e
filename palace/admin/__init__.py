"""The palace app's admin: importing this package registers its pages (Django's admin autodiscovery imports it).

- structure.py: palaces, memberships, rooms, slots and the tour, and the read-only op log;
- projects.py: requests for new projects (ATRIUM_PROJECT_APPROVAL), approved or declined by an action;
- readonly.py: the read-only admin mixins (ReadOnlyAdmin, and BodyMaskedAdmin for rows that carry bodies);
- console.py: the audit console over the op log (filters, a row's page, CSV/JSON export), re-registering OpLog.

The audited site every app's admin goes through lives beside, in palace/admin_site.py: it is imported when
`admin.site` is first touched, which can happen before this package is, so it must not import it.
"""

from __future__ import annotations

from palace.admin import console, projects, structure
from palace.admin.console import AuditConsoleAdmin, can_restore, parse_moment
from palace.admin.readonly import BODY_HIDDEN, BodyMaskedAdmin, ReadOnlyAdmin, can_see_bodies

__all__ = [
    "BODY_HIDDEN",
    "AuditConsoleAdmin",
    "BodyMaskedAdmin",
    "ReadOnlyAdmin",
    "can_restore",
    "can_see_bodies",
    "console",
    "parse_moment",
    "projects",
    "structure",
]
