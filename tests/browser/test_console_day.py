"""A research team's day, done from the team console alone, in Debian's Chromium against the local
stack's real API, the console served by the stack's AdminFunction.

The CRC (a member) works in a Chinese browser: reads week 9's report, looks at a patient's symptom
trend across visits and cancels a reminder. The PI (an admin) works in an English browser: reads
the hot memory and corrects a line, rewords a held review item and approves it, corrects week 9's
report with a reason, and opens what the model saw for an answer. Every outcome is checked through
the API as well as on the page.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.console_site import open_console, problems, show_view, sign_in
from tests.support.console_data import (
    ADMIN,
    CONTEXT_LINE,
    MEMBER,
    PATIENT,
    REPORTS,
    REWORDED,
    ConsoleProject,
    seed_console_project,
)

pytestmark = pytest.mark.slow

CORRECTED_CONTEXT = "当前重点任务：清理 3 月份的 Query，并准备 4 月的监查访视。"
CORRECTED_WEEK = (
    "[进度] 本周入组 2 例（P013、P014），累计入组 14 例。\n[决定] 周会决定：化验单一律人工复核后再录入 EDC。"
)

def _crc_day(page: Any, seeded: ConsoleProject) -> None:
    """Week 9's report, the patient's symptom trend, a reminder cancelled."""
    from playwright.sync_api import expect

    show_view(page, "history")
    expect(page.locator('article.report[data-week="2026-W09"] pre.summary')).to_have_text(REPORTS["2026-W09"])
    show_view(page, "patients", PATIENT)
    expect(page.locator("#trend-chart")).to_have_attribute("data-points", re.compile(r"^[1-9]\d*$"), timeout=60_000)
    fever = page.locator('tr[data-symptom="发烧"] td')
    assert [fever.nth(i).get_attribute("data-status") for i in range(3)] == ["present", "resolved", "not_mentioned"]
    show_view(page, "reminders")
    page.locator("tr.reminder button.cancel-reminder").click()
    page.locator("tr.reminder button.confirm-cancel-reminder").click()
    expect(page.locator("tr.reminder")).to_have_count(0)
    expect(page.locator("main .status")).to_have_text("已取消提醒“清理Query”。")
    owners = [r["owner"] for r in seeded.call(ADMIN, "GET", "/reminders").json()["reminders"]]
    assert owners == [ADMIN]


def _pi_memory_and_review(page: Any, seeded: ConsoleProject) -> None:
    """Correct a line of the hot memory in the editor; reword a held item and approve it."""
    from playwright.sync_api import expect

    show_view(page, "memory")
    assert page.locator('li.line[data-line-id="hm-ctx"] .text').inner_text() == CONTEXT_LINE
    version = int(page.locator("#version").get_attribute("data-version"))
    markdown = page.locator("#markdown").input_value()
    page.fill("#markdown", markdown.replace(CONTEXT_LINE, CORRECTED_CONTEXT))
    page.fill("#edit-reason", "监查访视已排期")
    page.click("#save")
    expect(page.locator("#version")).to_have_attribute("data-version", str(version + 1))
    expect(page.locator("li.line .text", has_text=CORRECTED_CONTEXT)).to_have_count(1)
    texts = [line["text"] for line in seeded.call(ADMIN, "GET", "/memory").json()["lines"]]
    assert CORRECTED_CONTEXT in texts and CONTEXT_LINE not in texts
    show_view(page, "review")
    item = page.locator(f'li.review-item[data-item-id="{seeded.review_item_id}"]')
    item.locator("textarea.review-text").fill(REWORDED)
    item.locator("button.approve").click()
    expect(item).to_have_count(0)
    assert REWORDED in [line["text"] for line in seeded.call(ADMIN, "GET", "/memory").json()["lines"]]


def _pi_history_and_sessions(page: Any, seeded: ConsoleProject) -> None:
    """Correct week 9's report with a reason; see what the model saw for the CRC's answer."""
    from playwright.sync_api import expect

    show_view(page, "history")
    week = page.locator('article.report[data-week="2026-W09"]')
    week.locator("button.correct").click()
    week.locator("textarea").fill(CORRECTED_WEEK)
    week.locator('input[name="reason"]').fill("P014 was enrolled on Friday")
    week.locator("button.save-correction").click()
    expect(week).to_have_attribute("data-revision", "2")
    (report,) = seeded.call(ADMIN, "GET", "/reports", params={"from": "2026-W09", "to": "2026-W09"}).json()["reports"]
    assert (report["summary"], report["revision"]) == (CORRECTED_WEEK, 2)
    show_view(page, "sessions", f"chat-{MEMBER}")
    answer = page.locator(f'li.message[data-message-id="{seeded.message_ids[MEMBER]}"]')
    answer.locator("button.show-context").click()
    blocks = answer.locator(".model-context details.block")
    expect(blocks.first).to_be_visible()
    names = [blocks.nth(i).get_attribute("data-block") for i in range(blocks.count())]
    asked = blocks.nth(names.index("user_message"))
    asked.locator("summary").click()
    assert "每周一早上9点提醒我清理Query" in asked.locator("pre").inner_text()


def test_a_crc_and_a_pi_do_their_day_from_the_console(browser: Any, local_stack: Any) -> None:
    seeded = seed_console_project(local_stack, prefix="day")
    base = local_stack.base_url
    crc_context, crc = open_console(browser, base, locale="zh-CN")
    sign_in(crc, base, seeded.project_id, seeded.token(MEMBER))
    _crc_day(crc, seeded)
    pi_context, pi = open_console(browser, base, locale="en-US")
    sign_in(pi, base, seeded.project_id, seeded.token(ADMIN))
    _pi_memory_and_review(pi, seeded)
    _pi_history_and_sessions(pi, seeded)
    assert problems(crc) == [] and problems(pi) == []
    crc_context.close()
    pi_context.close()
