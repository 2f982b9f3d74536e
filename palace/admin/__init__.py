"""The palace app's admin: importing this package registers its pages (Django's admin autodiscovery imports it).

- structure.py: palaces, memberships, rooms, slots and the tour, and the read-only op log;
- projects.py: requests for new projects (ATRIUM_PROJECT_APPROVAL), approved or declined by an action;
- console.py: the audit console over the op log (filters, a row's page, CSV/JSON export), re-registering OpLog.

The audited site every app's admin goes through lives beside, in palace/admin_site.py: it is imported when
`admin.site` is first touched, which can happen before this package is, so it must not import it.
"""

from __future__ import annotations

from palace.admin import console, projects, structure
from palace.admin.console import AuditConsoleAdmin, can_restore, parse_moment

__all__ = ["AuditConsoleAdmin", "can_restore", "console", "parse_moment", "projects", "structure"]
