"""The /admin editor in a real browser: Playwright driving Debian's Chromium (/usr/bin/chromium,
installed by .ci/run from .ci/apt-packages; Playwright's own browser download is never used).

An admin signs in with a dev token, sees each line's source, deletes an AI line (the kill switch),
sees the new revision, restores the old one, is told "someone else saved first" on a 409, and a
line containing <script> shows as text.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from agent_memory.domain.models import HotMemory, HotMemoryLine, Project
from agent_memory.domain.text import estimate_tokens
from infra.local.stack import LocalStack
from tests.support.auth import bearer

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
STATIC = Path(__file__).resolve().parents[2] / "functions" / "admin" / "static"
T0 = datetime(2026, 3, 2, 1, 0, tzinfo=UTC)
WRONG_RULE = "不需要查年龄"
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
ADMIN = "u-ui-admin"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright. Missing -> FAIL (CI installs it), never skip."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install -y chromium`; "
            ".ci/run installs everything listed in .ci/apt-packages)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def project(local_stack: LocalStack) -> str:
    """A fresh project: an admin rule, a wrong AI line with evidence, an AI line holding markup."""
    project_id = f"ui-{uuid.uuid4().hex[:10]}"
    local_stack.repo.put_project(Project(project_id=project_id, name=project_id, created_at=T0))
    lines = [
        HotMemoryLine(line_id="hm-sys", section="System Rules", text="【系统禁令】严禁在未授权情况下删除数据",
                      source="admin", created_at=T0, created_by="u-pi-zhang"),
        HotMemoryLine(line_id="hm-wrong", section="Lessons Learned", text=WRONG_RULE, source="distilled",
                      created_at=T0, created_by="distiller", evidence=["m17", "m18"]),
        HotMemoryLine(line_id="hm-xss", section="Active Context", text=XSS, source="distilled",
                      created_at=T0, created_by="distiller", evidence=["m19"]),
    ]
    hot = HotMemory(project_id=project_id, lines=lines)
    local_stack.repo.save_hot_memory(hot, expected_version=0, actor="seed", reason="seed", now=T0,
                                     tokens=estimate_tokens(hot.render()))
    return project_id


def test_the_editor_script_never_renders_data_as_html() -> None:
    script = (STATIC / "editor.js").read_text(encoding="utf-8")
    assert re.findall(r"\.(?:innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write", script) == []


def test_admin_deletes_an_ai_line_restores_it_and_is_told_about_a_conflict(
    local_stack: LocalStack, browser: Any, project: str
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("dialog", lambda dialog: dialog.accept())
    headers = bearer(f"{project}:admin", ADMIN)
    token = headers["Authorization"].removeprefix("Bearer ")

    # Given the admin opens /admin and signs in with a dev token
    page.goto(f"{local_stack.base_url}/admin")
    page.fill("#project", project)
    page.fill("#token", token)
    page.click("#signin")

    # Then every line shows its source, author, time and evidence
    page.wait_for_selector("#lines li.line >> nth=2")
    assert page.text_content("#version") == "version 1"
    wrong = page.locator('li.line[data-line-id="hm-wrong"]')
    assert wrong.locator(".badge").text_content() == "distilled"
    assert "distiller" in wrong.locator(".meta").text_content() and "m17, m18" in wrong.locator(".meta").text_content()
    assert page.locator('li.line[data-line-id="hm-sys"] .badge').text_content() == "admin"
    # and a line holding markup shows as text: no element made from it, no script ran
    assert page.locator('li.line[data-line-id="hm-xss"] .text').text_content() == XSS
    assert page.locator("#lines script, #lines img").count() == 0
    assert page.evaluate("window.__xss") is None

    # When the admin deletes the AI line (the kill switch)
    wrong.locator("button.delete").click()
    # Then it is gone and the new revision is listed first
    page.wait_for_selector('li.line[data-line-id="hm-wrong"]', state="detached")
    assert page.text_content("#version") == "version 2"
    page.wait_for_selector('li.revision[data-version="2"]')
    first = page.locator("li.revision").first
    assert first.get_attribute("data-version") == "2" and "deleted distilled line hm-wrong" in first.text_content()
    assert WRONG_RULE not in requests.get(
        f"{local_stack.base_url}/v1/projects/{project}/memory", headers=headers, timeout=30
    ).json()["markdown"]
    # and its diff shows the removed line
    first.locator("button.show-diff").click()
    page.wait_for_selector("#diff:not([hidden])")
    assert f"-- {WRONG_RULE}" in page.text_content("#diff")

    # When the admin restores version 1
    page.locator('li.revision[data-version="1"] button.restore').click()
    # Then version 3 holds the line again, with its original provenance
    expect(page.locator("#version")).to_have_text("version 3")
    back = page.locator('li.line[data-line-id="hm-wrong"]')
    assert back.locator(".badge").text_content() == "distilled"
    assert page.locator("li.revision").first.get_attribute("data-version") == "3"

    # Given someone else saves through the API while the admin edits version 3
    other = requests.get(f"{local_stack.base_url}/v1/projects/{project}/memory", headers=headers, timeout=30).json()
    saved = requests.put(
        f"{local_stack.base_url}/v1/projects/{project}/memory",
        headers={**bearer(f"{project}:admin", "u-other-admin"), "If-Match": '"3"'},
        json={"markdown": other["markdown"] + "\n- 另一位管理员的修改", "reason": "concurrent"},
        timeout=30,
    )
    assert saved.status_code == 200 and saved.json()["memory"]["version"] == 4
    # When the admin saves their edit
    mine = page.input_value("#markdown") + "\n- 我的修改"
    page.fill("#markdown", mine)
    page.click("#save")
    # Then they are told someone else saved first, and their text is still there
    page.wait_for_selector("#status.error")
    assert re.search(r"Someone else saved first . reload", page.text_content("#status"))
    assert "version 4" in page.text_content("#status")
    assert page.input_value("#markdown") == mine
    assert page.text_content("#version") == "version 3"
    # and Reload shows the other admin's version
    page.click("#reload")
    expect(page.locator("#version")).to_have_text("version 4")
    assert "另一位管理员的修改" in page.input_value("#markdown")

    assert [e for e in errors if "409" not in e] == []
    page.close()


def test_a_member_is_refused_and_told_so(local_stack: LocalStack, browser: Any, project: str) -> None:
    page = browser.new_page()
    page.goto(f"{local_stack.base_url}/admin")
    page.fill("#project", project)
    page.fill("#token", bearer(f"{project}:member", "u-member")["Authorization"].removeprefix("Bearer "))
    page.click("#signin")
    page.wait_for_selector("#status.error")
    assert "Not allowed" in page.text_content("#status")
    page.close()
