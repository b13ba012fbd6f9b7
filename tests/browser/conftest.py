"""The browser tests' Chromium: one per test module (Debian's, driven by Playwright)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.console_site import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright; missing is a failure, never a skip (CI installs it from
    .ci/apt-packages)."""
    try:
        with chromium() as launched:
            yield launched
    except RuntimeError as missing:
        pytest.fail(str(missing))
