"""The team console in a real browser, for its tests and `make console-screenshots`.

The local stack's AdminFunction serves the console (``GET /console`` -> ``console/index.html``, its
files with their types and Content-Security-Policy: ``agent_memory.http.console``), so the page
calls the stack's real API as a deployment's page does (same origin, bearer token). Only a test of
the Cognito Hosted UI sign-in changes what the browser gets: the page's ``config.json`` names a
stand-in hosted UI, and the CSP admits that stand-in's origin (:func:`serve_console`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agent_memory.domain.errors import NotFound
from agent_memory.http.console import ConsoleSite

CONSOLE_DIR = Path(__file__).resolve().parents[2] / "functions" / "admin" / "static" / "console"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
#: Chromium logs every 4xx a fetch got; those are answers the console shows, not faults.
EXPECTED_LOG = re.compile(r"Failed to load resource: the server responded with a status of 4\d\d")
#: The views in navigation order, and those a member sees (the routes' access: agent_memory/http/routes/).
VIEWS = ("memory", "review", "history", "reminders", "patients", "sessions", "members", "feedback", "audit")
MEMBER_VIEWS = ("history", "reminders", "patients", "sessions", "members")


def serve_console(context: Any, base_url: str, *, hosted_ui_domain: str, client_id: str) -> None:
    """Answer ``{base_url}/console/...`` in the browser ``context`` as the AdminFunction of a
    deployment with that Cognito Hosted UI answers (:class:`ConsoleSite`: its config.json names the
    hosted UI, its CSP admits the hosted UI's origin): a stand-in hosted UI the local stack's
    settings do not name."""
    site = ConsoleSite(CONSOLE_DIR, hosted_ui_domain=hosted_ui_domain, client_id=client_id)

    def handler(route: Any) -> None:
        relative = urlparse(route.request.url).path.removeprefix("/console/") or "index.html"
        try:
            answer = site.answer(relative, None)
        except NotFound:
            route.fulfill(status=404, body=b"not found", headers={"Content-Type": "text/plain"})
            return
        route.fulfill(status=answer.status_code, body=answer.body, headers=answer.headers)

    context.route(f"{base_url}/console/**", handler)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium under Playwright (its own browser download is never used)."""
    if not CHROMIUM.exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing: install Debian's chromium (make system-deps, from .ci/apt-packages)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_console(browser: Any, base_url: str, *, locale: str, timezone_id: str = "America/New_York",
                 hosted_ui: tuple[str, str] | None = None) -> tuple[Any, Any]:
    """A new browser context (``locale``: what navigator.languages says; the browser's zone is
    deliberately not the project's) and a page on it; ``hosted_ui``: the (domain, app client id)
    of a stand-in Cognito Hosted UI (:func:`serve_console`). Returns ``(context, page)``; the
    page's errors and CSP violations are collected in ``page.problems``."""
    context = browser.new_context(locale=locale, timezone_id=timezone_id, viewport={"width": 1280, "height": 900})
    if hosted_ui is not None:
        serve_console(context, base_url, hosted_ui_domain=hosted_ui[0], client_id=hosted_ui[1])
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.problems = problems
    return context, page


def sign_in(page: Any, base_url: str, project_id: str, token: str) -> None:
    """Open the console (``/console``, which redirects to its page) and sign in with a token;
    waits for the navigation."""
    page.goto(f"{base_url}/console")
    page.fill("#project", project_id)
    page.fill("#token", token)
    page.click("#signin")
    page.wait_for_selector("nav.views a[data-view]")


def show_view(page: Any, view: str, arg: str = "") -> None:
    """Go to a view (#/<view>[/<arg>]) and wait until it has loaded."""
    page.evaluate("(hash) => { location.hash = hash; }", f"#/{view}" + (f"/{arg}" if arg else ""))
    from playwright.sync_api import expect

    page.wait_for_selector(f'main[data-view="{view}"]')
    expect(page.locator("main .loading")).to_have_count(0, timeout=30_000)


def problems(page: Any) -> list[str]:
    """The page's errors and CSP violations (:func:`open_console` collects them), less the logged
    4xx answers."""
    return [p for p in page.problems if not EXPECTED_LOG.search(p)]
