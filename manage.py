#!/usr/bin/env python
"""Django's command-line utility; `atrium` (config.cli) is the same with the settings preset."""

from __future__ import annotations

from config.cli import main

if __name__ == "__main__":
    main()
