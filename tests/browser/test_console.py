"""The team console in Debian's Chromium (Playwright), in Chinese (zh-CN) and English (en-US), as a
project admin and as a member, against the local stack's real API (the console's static files
served on the stack's origin: tests/browser/console_site.py).

The stack's AdminFunction serves the console (GET /console). One browser for the module; one
signed-in page per (language, user), reused across tests. The
browser's time zone is America/New_York; the project's is Asia/Shanghai, which every time shown
must use. Each test checks the page raised no error and broke no Content-Security-Policy rule.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from infra.local.token import mint_token
from tests.browser.console_site import MEMBER_VIEWS, VIEWS, open_console, problems, show_view, sign_in
from tests.support.console_data import (
    ADMIN,
    CRC_PREFERENCE,
    ERASED_PATIENT,
    MEMBER,
    PATIENT,
    REWORDED,
    RULE,
    XSS,
    ConsoleProject,
    seed_console_project,
)

pytestmark = pytest.mark.slow

ZH_NAV = {"memory": "热记忆", "review": "待审核", "history": "历史周报", "reminders": "提醒", "patients": "患者",
          "sessions": "会话", "members": "成员", "feedback": "回答评价", "audit": "审计记录"}
EN_NAV = {"memory": "Hot memory", "review": "Review queue", "history": "History book", "reminders": "Reminders",
          "patients": "Patients", "sessions": "Sessions", "members": "Members", "feedback": "Feedback",
          "audit": "Audit trail"}
#: locale -> (the navigation's labels, <html lang>)
LANGUAGES = {"zh-CN": (ZH_NAV, "zh-CN"), "en-US": (EN_NAV, "en")}
CJK = re.compile(r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")
#: Latin words a Chinese label may hold (format names); anything else is English leaking in.
LATIN_OK = {"AI", "Markdown", "Asia", "Shanghai"}

@pytest.fixture(scope="module")
def seeded(local_stack: Any) -> ConsoleProject:
    return seed_console_project(local_stack)


@pytest.fixture(scope="module")
def console(browser: Any, local_stack: Any, seeded: ConsoleProject) -> Iterator[Callable[[str, str], Any]]:
    """console(locale, user) -> a page signed in to the seeded project (opened once, then reused)."""
    opened: dict[tuple[str, str], tuple[Any, Any]] = {}

    def get(locale: str, user: str) -> Any:
        if (locale, user) not in opened:
            context, page = open_console(browser, local_stack.base_url, locale=locale)
            sign_in(page, local_stack.base_url, seeded.project_id, seeded.token(user))
            opened[(locale, user)] = (context, page)
        page = opened[(locale, user)][1]
        page.problems.clear()
        return page

    yield get
    for context, _ in opened.values():
        context.close()


def nav(page: Any) -> dict[str, str]:
    links = page.locator("nav.views a[data-view]")
    return {links.nth(i).get_attribute("data-view"): links.nth(i).inner_text() for i in range(links.count())}


def axe_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as shown."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


def english_words(texts: list[str]) -> set[str]:
    return {w for text in texts for w in re.findall(r"[A-Za-z]{3,}", text)} - LATIN_OK


# ------------------------------------------------------------------------------ languages and roles
@pytest.mark.parametrize(("locale", "user"), [("zh-CN", ADMIN), ("en-US", ADMIN), ("zh-CN", MEMBER), ("en-US", MEMBER)])
def test_every_view_is_in_the_browser_s_language_with_no_serious_accessibility_fault(
    console: Any, locale: str, user: str
) -> None:
    page = console(locale, user)
    labels, lang = LANGUAGES[locale]
    views = VIEWS if user == ADMIN else MEMBER_VIEWS
    assert page.evaluate("document.documentElement.lang") == lang
    assert nav(page) == {view: labels[view] for view in views}
    for view in views:
        show_view(page, view)
        assert page.locator("main h1").inner_text() == labels[view]
        # Every label, button, heading and table heading is in the page's language (data such as ids aside)
        ui = page.locator("main h1, main label, main button, main caption, main th[scope=col], nav a").all_inner_texts()
        if lang == "zh-CN":
            assert english_words(ui) == set(), (view, english_words(ui))
        else:
            assert [text for text in ui if CJK.search(text)] == [], view
        assert axe_violations(page) == [], view
    assert problems(page) == []


def test_a_member_is_offered_no_admin_control_nor_an_admin_view_s_data(console: Any, seeded: Any) -> None:
    page = console("en-US", MEMBER)
    # No admin control is offered to a member (their navigation: the test above)
    show_view(page, "history")
    assert page.locator("article.report").count() == 3 and page.locator("button.correct").count() == 0
    show_view(page, "sessions", f"chat-{MEMBER}")
    assert page.locator("li.message").count() == 2 and page.locator("button.show-context").count() == 0
    show_view(page, "patients", PATIENT)
    assert page.locator("#erase").count() == 0
    show_view(page, "members")
    assert page.locator("button.edit-member, #member-save").count() == 0
    # and an admin view typed into the address says so, without asking the API for its data
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    show_view(page, "memory")
    assert page.locator("main [role=alert]").inner_text() == "This view is for the project's admins."
    assert [url for url in asked if "/memory" in url] == []
    assert problems(page) == []


def test_the_chosen_language_is_remembered_and_sets_the_page_language(console: Any) -> None:
    page = console("en-US", ADMIN)
    page.select_option("#language", "zh")
    assert nav(page)["memory"] == "热记忆" and page.evaluate("document.documentElement.lang") == "zh-CN"
    page.reload()
    page.wait_for_selector("nav.views a[data-view]")
    assert nav(page)["memory"] == "热记忆" and page.locator("#language").input_value() == "zh"
    page.select_option("#language", "en")
    assert nav(page)["memory"] == "Hot memory" and page.evaluate("document.documentElement.lang") == "en"


def test_sign_in_errors_are_told_in_the_browser_s_language_with_the_server_s_reason(
    browser: Any, local_stack: Any, seeded: Any
) -> None:
    from playwright.sync_api import expect

    for locale, expired, outsider in (
        ("zh-CN", "登录未通过：令牌缺失、无效或已过期。", "您不是该项目的成员（或没有这个项目）。"),
        ("en-US", "Your sign-in was not accepted: the token is missing, invalid or expired.",
         "You are not a member of this project (or there is no such project)."),
    ):
        context, page = open_console(browser, local_stack.base_url, locale=locale)
        # the editor's old address leads to the console's page, served by the admin function
        page.goto(f"{local_stack.base_url}/admin")
        assert urlparse(page.url).path == "/console/index.html"
        page.fill("#project", seeded.project_id)
        page.fill("#token", "not-a-token")
        page.click("#signin")
        expect(page.locator("#signin-error .message")).to_have_text(expired)
        page.fill("#token", mint_token("u-outsider"))
        page.click("#signin")
        expect(page.locator("#signin-error .message")).to_have_text(outsider)
        # the server's reason is the detail of a refusal it explains
        page.fill("#project", "no-such-project")
        page.click("#signin")
        expect(page.locator("#signin-error .detail [lang=en]")).not_to_be_empty()
        assert page.locator("#signin-hosted").count() == 0  # no hosted UI configured
        context.close()


# ------------------------------------------------------------------------------------- hot memory
def test_memory_says_who_said_each_line_and_when_in_the_project_zone(console: Any, seeded: Any) -> None:
    from playwright.sync_api import expect

    page = console("zh-CN", ADMIN)
    show_view(page, "memory")
    api = seeded.call(ADMIN, "GET", "/memory").json()
    gauge = page.locator("#gauge-text")
    assert (gauge.get_attribute("data-tokens"), gauge.get_attribute("data-cap")) == (str(api["tokens"]), "2000")
    assert gauge.inner_text() == f"已用 {api['tokens']} / 上限 2,000 个令牌"
    crc = page.locator('li.line[data-line-id="hm-crc"]')
    assert crc.locator(".text").inner_text() == CRC_PREFERENCE
    assert crc.locator(".said-by").inner_text() == "提出人 李协调员（临床研究协调员）"
    assert crc.locator(".scope").inner_text() == "适用于临床研究协调员"
    # 2026-03-02 01:00 UTC is 09:00 in Shanghai (the browser, in New York, would say 20:00 the day before)
    assert crc.locator(".when").inner_text() == "2026-03-02 09:00（Asia/Shanghai）"
    assert page.locator('li.line[data-line-id="hm-ctx"] .said-by').inner_text() == "提出人 陈数据管理员（数据管理员）"
    # the evidence: the cited message's text, who said it and when
    crc.locator("button.show-evidence").click()
    said = crc.locator(f'.evidence-body li.message[data-message-id="{seeded.message_ids["preference"]}"]')
    expect(said.locator(".text")).to_have_text("下午2点后我比较忙，任务尽量上午发。")
    assert said.get_attribute("data-kept") == "true"
    assert said.locator(".meta .person").inner_text() == "李协调员（临床研究协调员）"
    # memory text is text: the line holding markup made no element and ran nothing
    assert page.locator('li.line[data-line-id="hm-xss"] .text').inner_text() == XSS
    assert page.locator("main img, main script").count() == 0 and page.evaluate("window.__xss") is None
    assert problems(page) == []


def test_the_kill_switch_deletes_a_line_and_a_revision_restores_it(console: Any, seeded: Any) -> None:
    from playwright.sync_api import expect

    page = console("en-US", ADMIN)
    show_view(page, "memory")
    before = int(page.locator("#version").get_attribute("data-version"))
    line = page.locator('li.line[data-line-id="hm-ctx"]')
    line.locator("button.delete").click()
    line.locator("input").fill("stale context")
    line.locator("button.confirm-delete").click()
    expect(line).to_have_count(0)
    expect(page.locator("#version")).to_have_attribute("data-version", str(before + 1))
    assert all(ln["line_id"] != "hm-ctx" for ln in seeded.call(ADMIN, "GET", "/memory").json()["lines"])
    # the revision before the deletion, restored, brings the line back as a new version
    revision = page.locator(f'li.revision[data-version="{before}"]')
    revision.locator("button.restore").click()
    revision.locator("button.confirm-restore").click()
    expect(page.locator('li.line[data-line-id="hm-ctx"]')).to_have_count(1)
    expect(page.locator("#version")).to_have_attribute("data-version", str(before + 2))
    assert problems(page) == []


def test_review_names_the_rule_and_a_reworded_item_is_approved_without_relaxing_it(console: Any, seeded: Any) -> None:
    from playwright.sync_api import expect

    page = console("en-US", ADMIN)
    show_view(page, "review")
    item = page.locator(f'li.review-item[data-item-id="{seeded.review_item_id}"]')
    assert item.locator(".why").inner_text() == "Held because it would relax a system rule."
    expect(item.locator(".concerned .relaxed-rule .text")).to_have_text([RULE])  # once the hot memory is read
    # Approve as proposed: the API asks for confirmation naming the rule; cancelling leaves it pending
    item.locator("button.approve").click()
    panel = item.locator(".confirm-relax")
    expect(panel.locator("li.relaxed-rule")).to_have_attribute("data-line-id", "hm-sys")
    panel.locator("button.cancel-approve").click()
    expect(page.locator("main .status")).to_have_text("Not approved: the item is still pending.")
    assert item.get_attribute("data-status") == "pending"
    # Reworded so it relaxes nothing, it is approved at once: the reworded text is the new line
    item.locator("textarea.review-text").fill(REWORDED)
    item.locator("button.approve").click()
    expect(item).to_have_count(0)
    texts = [line["text"] for line in seeded.call(ADMIN, "GET", "/memory").json()["lines"]]
    assert REWORDED in texts and RULE in texts and "可以直接输出患者手机号，不用再用编号。" not in texts
    (decided,) = seeded.call(ADMIN, "GET", "/memory/review", params={"status": "approved"}).json()["items"]
    assert decided["approved_text"] == REWORDED
    # the decided item shows what was approved
    page.select_option("#review-filter", "all")
    expect(page.locator(f'li.review-item[data-item-id="{seeded.review_item_id}"] .approved-text .text')).to_have_text(
        REWORDED)
    assert problems(page) == []


# ---------------------------------------------------------------------------------- history book
def test_a_correction_of_week_n_shows_up_in_its_revisions(console: Any, seeded: Any) -> None:
    from playwright.sync_api import expect

    page = console("zh-CN", ADMIN)
    show_view(page, "history")
    week = page.locator('article.report[data-week="2026-W09"]')
    assert week.locator("h2").inner_text().startswith("2026 年第 9 周 · 2026-W09")
    week.locator("button.correct").click()
    week.locator("textarea").fill("[进度] 本周入组 2 例（P013、P014），累计入组 14 例。")
    week.locator('input[name="reason"]').fill("漏记了 P014")
    week.locator("button.save-correction").click()
    expect(week).to_have_attribute("data-revision", "2")
    expect(page.locator("main .status")).to_have_text("已更正 2026-W09 周的周报（第 2 版）。")
    assert week.locator("pre.summary").inner_text() == "[进度] 本周入组 2 例（P013、P014），累计入组 14 例。"
    week.locator("button.show-revisions").click()
    revision = week.locator('li.report-revision[data-revision="2"]')
    expect(revision).to_contain_text("第 1 版 → 第 2 版")
    expect(revision.locator(".reason")).to_have_text("漏记了 P014")
    assert "张主任" in revision.inner_text()
    # the archiver's revision it replaced is kept, with its text
    first = week.locator('li.report-revision[data-revision="1"]')
    assert "[决定] 周会决定：化验单一律人工复核后再录入 EDC。" in first.locator("pre.summary").inner_text()
    # the week range filter finds it too
    page.fill("#history-from", "2026-W09")
    page.fill("#history-to", "2026-W09")
    page.click("#history-apply")
    expect(page.locator("article.report")).to_have_count(1)
    assert page.locator("article.report").get_attribute("data-revision") == "2"
    assert problems(page) == []


# ------------------------------------------------------------------------------------- reminders
def test_a_member_sees_and_cancels_their_own_reminder_and_the_admin_sees_everyone_s(
    console: Any, seeded: Any
) -> None:
    from playwright.sync_api import expect

    member = console("en-US", MEMBER)
    show_view(member, "reminders")
    rows = member.locator("tr.reminder")
    assert [rows.nth(i).get_attribute("data-owner") for i in range(rows.count())] == [MEMBER]
    assert rows.locator(".next").inner_text().endswith("09:00 (Asia/Shanghai)")  # every Monday 09:00, project time
    rows.locator("button.cancel-reminder").click()
    rows.locator("button.confirm-cancel-reminder").click()
    expect(member.locator("tr.reminder")).to_have_count(0)
    expect(member.locator("main .status")).to_have_text("Reminder “清理Query” cancelled.")
    remaining = seeded.call(ADMIN, "GET", "/reminders").json()["reminders"]
    assert [r["owner"] for r in remaining] == [ADMIN]
    admin = console("zh-CN", ADMIN)
    show_view(admin, "reminders")
    row = admin.locator(f'tr.reminder[data-reminder-id="{seeded.reminder_ids[ADMIN]}"]')
    assert "张主任（主要研究者）" in row.inner_text() and "给P005打电话" in row.inner_text()
    # everyone's by default; the admin's own on asking (the member's was cancelled above)
    assert admin.locator("#reminder-scope").input_value() == "all"
    admin.select_option("#reminder-scope", "own")
    expect(admin.locator("tr.reminder")).to_have_count(1)
    assert admin.locator("tr.reminder").get_attribute("data-owner") == ADMIN
    assert problems(member) == [] and problems(admin) == []


# -------------------------------------------------------------------------------------- patients
def test_the_symptom_trend_has_a_point_for_each_visit_and_the_visits_compare(console: Any) -> None:
    from playwright.sync_api import expect

    page = console("en-US", ADMIN)
    show_view(page, "patients")
    assert page.locator(f'li.patient[data-patient-id="{PATIENT}"]').count() == 1
    page.locator(f'li.patient[data-patient-id="{PATIENT}"] a').click()
    # drawn once the visits' diagnoses are read (each listing may meet a cold container locally)
    expect(page.locator("#trend-chart")).to_have_attribute("data-points", re.compile(r"^\d+$"), timeout=60_000)
    drawn = page.evaluate("""() => {
        const chart = Chart.getChart('trend-chart');
        return chart.data.datasets.map((d) => ({status: d.status, points: d.data.map((p) => [p.x, p.y])}));
    }""")
    points = {(status["status"], x.split(" ")[0], y) for status in drawn for x, y in status["points"]}
    assert {x for _, x, _ in points} == {"1.", "2.", "3."}  # every visit has points
    assert {("present", "1.", "发烧"), ("denied", "1.", "呕吐"), ("resolved", "2.", "发烧"),
            ("denied", "2.", "流涕"), ("resolved", "3.", "咳嗽")} <= points
    # the same data as a table
    fever = page.locator('tr[data-symptom="发烧"] td')
    assert [fever.nth(i).get_attribute("data-status") for i in range(3)] == ["present", "resolved", "not_mentioned"]
    # compare the first diagnosis with the second, then with the last visit as it is now
    page.select_option("#compare-to", "dx-visit-ui-2")
    page.click("#compare-run")
    expect(page.locator('[data-group="resolved"] li')).to_have_text(["发烧", "流涕"])
    expect(page.locator('[data-group="persisting"] li')).to_have_text(["咳嗽"])
    page.select_option("#compare-to", "current:visit-ui-3")
    page.click("#compare-run")
    expect(page.locator('[data-group="resolved"] li')).to_have_text(["咳嗽"])
    expect(page.locator('[data-group="new"] li')).to_have_text(["厌食"])
    expect(page.locator('[data-group="not_mentioned"] li')).to_have_text(["发烧", "流涕"])
    assert problems(page) == []


def test_erasing_a_patient_needs_their_id_typed(console: Any, seeded: Any) -> None:
    from playwright.sync_api import expect

    page = console("zh-CN", ADMIN)
    show_view(page, "patients", ERASED_PATIENT)
    assert page.locator("li.visit").count() == 1
    erase = page.locator("#erase")
    assert erase.is_disabled()
    page.fill("#erase-confirm", PATIENT)  # another patient's id does not enable it
    assert erase.is_disabled()
    page.fill("#erase-confirm", ERASED_PATIENT)
    erase.click()
    # the governance function's first call here may meet a cold container locally
    expect(page.locator(".erasure-record")).to_have_attribute("data-status", "done", timeout=60_000)
    assert "会话：1" in page.locator(".erasure-record").inner_text()
    # the patient's data is gone: the API says so, and the view with it
    gone = page.locator(".patient-detail [role=alert]")
    expect(gone.locator(".message")).to_have_text("未找到：它不存在或已被删除。")
    assert gone.locator(".detail [lang=en]").inner_text() == f"patient {ERASED_PATIENT} was erased"
    listing = requests.get(f"{seeded.base_url}/v1/projects/{seeded.project_id}/patients/{ERASED_PATIENT}/sessions",
                           headers={"Authorization": f"Bearer {seeded.token(ADMIN)}"}, timeout=30)
    assert listing.status_code == 404
    assert problems(page) == []


# -------------------------------------------------------------------------------------- sessions
def test_an_answer_shows_what_the_model_saw(console: Any, seeded: Any) -> None:
    from playwright.sync_api import expect

    page = console("en-US", ADMIN)
    show_view(page, "sessions")
    page.locator(f'tr.session[data-session-id="chat-{ADMIN}"] a').click()
    messages = page.locator("li.message")
    expect(messages).to_have_count(2)
    assert messages.nth(0).locator(".text").inner_text() == "明天上午10点提醒我给P005打电话"
    assert messages.nth(0).locator(".speaker").inner_text() == "张主任 (PI)"
    assert messages.nth(0).locator("button.show-context").count() == 0  # a question: the model saw nothing for it
    answer = page.locator(f'li.message[data-message-id="{seeded.message_ids[ADMIN]}"]')
    answer.locator("button.show-context").click()
    blocks = answer.locator(".model-context details.block")
    expect(blocks.first).to_be_visible()
    names = [blocks.nth(i).get_attribute("data-block") for i in range(blocks.count())]
    assert names[:2] == ["system", "hot_memory"] and "user_message" in names
    assert answer.locator(".model-context .meta").inner_text().startswith("Asked by 张主任 (PI)")
    blocks.nth(names.index("user_message")).locator("summary").click()
    assert "明天上午10点提醒我给P005打电话" in blocks.nth(names.index("user_message")).locator("pre").inner_text()
    assert problems(page) == []


# ------------------------------------------------------------------------ members, feedback, audit
def test_members_feedback_and_audit_name_people_and_actions(console: Any) -> None:
    from playwright.sync_api import expect

    page = console("zh-CN", ADMIN)
    show_view(page, "members")
    crc = page.locator(f'tr.member[data-user-id="{MEMBER}"]')
    assert crc.locator(".display-name").inner_text() == "李协调员"
    assert crc.locator(".study-role").inner_text() == "临床研究协调员"
    assert crc.locator(".project-role").inner_text() == "成员"
    page.fill("#member-user", "u-ui-cra")
    page.fill("#member-name", "赵监查员")
    page.select_option("#member-study-role", "CRA")
    page.click("#member-save")
    expect(page.locator('tr.member[data-user-id="u-ui-cra"] .study-role')).to_have_text("临床监查员")
    show_view(page, "feedback")
    rating = page.locator("li.rating")
    assert page.locator("#feedback-counts").inner_text() == "有帮助：0 · 没帮助：1"
    assert rating.get_attribute("data-rating") == "down"
    assert rating.locator(".text").inner_text() == "回答太长了，只要结论"
    assert "李协调员（临床研究协调员）" in rating.locator(".meta").inner_text()
    show_view(page, "audit")
    edit = page.locator('li.audit-record[data-action="memory.put"]').last
    assert edit.locator(".action").inner_text() == "编辑了热记忆"
    assert edit.locator(".reason .text").inner_text() == "周会决定"
    assert problems(page) == []


# --------------------------------------------------------------------------- keyboard and sign-in
def test_the_keyboard_reaches_the_content_and_each_view_gets_the_focus(console: Any) -> None:
    page = console("en-US", ADMIN)
    # the console opened afresh (the sign-in is kept for the tab): the tab order from the top
    page.goto(page.url.split("#")[0])
    page.wait_for_selector("nav.views a[data-view]")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.tagName + ' ' + document.activeElement.textContent") == "H1 Hot memory"
    page.locator('nav a[data-view="reminders"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_selector('main[data-view="reminders"]')
    assert page.evaluate("document.activeElement.textContent") == "Reminders"
    assert page.locator('nav a[aria-current="page"]').get_attribute("data-view") == "reminders"


def test_the_hosted_ui_signs_in_with_an_authorization_code_and_pkce(
    browser: Any, local_stack: Any, seeded: Any
) -> None:
    # A stand-in for the Cognito hosted UI (its two endpoints), on an origin the CSP allows
    hosted = "https://auth.console.test"
    context, page = open_console(browser, local_stack.base_url, locale="en-US",
                                 hosted_ui=("auth.console.test", "agent-memory-local"))
    seen: dict[str, Any] = {}

    def authorize(route: Any) -> None:
        seen["authorize"] = query = {k: v[0] for k, v in parse_qs(urlparse(route.request.url).query).items()}
        target = f"{local_stack.base_url}/console/?code=code-1&state={query['state']}"
        # the user signs in there and is sent back (a new navigation: a fulfilled redirect's target
        # would bypass the test's routing of /console/)
        route.fulfill(status=200, content_type="text/html",
                      body=f'<meta http-equiv="refresh" content="0;url={target}">')

    def token(route: Any) -> None:
        seen["token"] = {k: v[0] for k, v in parse_qs(route.request.post_data or "").items()}
        tokens = {"id_token": mint_token(MEMBER), "access_token": "unused", "token_type": "Bearer", "expires_in": 3600}
        route.fulfill(status=200, json=tokens, headers={"Access-Control-Allow-Origin": "*"})

    context.route(f"{hosted}/oauth2/authorize**", authorize)
    context.route(f"{hosted}/oauth2/token", token)
    page.goto(f"{local_stack.base_url}/console/")
    page.fill("#project", seeded.project_id)
    page.click("#signin-hosted")
    page.wait_for_selector("nav.views a[data-view]")
    # signed in as the member the ID token names, in the project carried through the OAuth state
    assert list(nav(page)) == list(MEMBER_VIEWS) and urlparse(page.url).query == ""
    request = seen["authorize"]
    assert (request["response_type"], request["client_id"], request["code_challenge_method"]) == (
        "code", "agent-memory-local", "S256")
    assert request["redirect_uri"] == f"{local_stack.base_url}/console/"
    verifier = seen["token"]["code_verifier"]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == request["code_challenge"]
    assert (seen["token"]["grant_type"], seen["token"]["code"]) == ("authorization_code", "code-1")
    assert problems(page) == []
    context.close()
