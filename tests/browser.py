"""Debian's chromium for the Playwright tests: never a downloaded browser."""

from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
#: Without the background-networking flags chromium's calls home are refused by this network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

#: Marks for a browser test module: skipped cleanly where chromium is not installed.
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed"),
]
