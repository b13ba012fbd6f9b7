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
    from playwright.sync_api import expect

    # How long an expectation waits for the page: a view's first call may meet a cold function
    # container of the local stack on a busy machine (a waiting limit, not a speed check).
    expect.set_options(timeout=30_000)
    try:
        with chromium() as launched:
            yield launched
    except RuntimeError as missing:
        pytest.fail(str(missing))
