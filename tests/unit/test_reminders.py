"""Reminders on the in-memory fakes: the zh/en time parser by kind of phrase, the refusals (past,
unreadable, too long, too many: nothing scheduled), quiet times from hot memory (a role's weekend
rule moves a reminder to Monday 09:00; quiet hours), delivery bookkeeping, and the reminder skill of
a chat turn through the offline provider."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from agent_memory.adapters.llm.offline_reminders import split_reminder_request
from agent_memory.adapters.scheduler import cron_expression, recurrence_from_cron, schedule_expression
from agent_memory.domain.errors import Forbidden, InvalidInput
from agent_memory.domain.models import HotMemoryLine
from agent_memory.domain.when import Recurrence
from agent_memory.reminders.quiet import next_allowed, quiet_rules, shift_recurrence
from agent_memory.reminders.service import cancel_reminder, deliver, list_reminders, schedule_reminder
from agent_memory.reminders.when import parse_when
from tests.fakes import InMemoryStore
from tests.unit.chat_support import hot_line, make_deps, seed_project
from tests.unit.reminder_support import RecordingChannel, reminder_deps

SH = "Asia/Shanghai"
#: Wednesday 2026-12-02 17:05 in Shanghai.
NOW = datetime(2026, 12, 2, 9, 5, tzinfo=UTC)
NOW_LOCAL = datetime(2026, 12, 2, 17, 5)


# ----------------------------------------------------------------------------- the parser, by kind
@pytest.mark.parametrize(("phrase", "expression"), [
    # recurrences: weekly (one day, several days, a range), daily, workdays, monthly; zh and en
    ("每周一早上9点", "cron(0 9 ? * MON *)"),
    ("每星期五下午4点半", "cron(30 16 ? * FRI *)"),
    ("每周二、四上午10点", "cron(0 10 ? * TUE,THU *)"),
    ("每周一至五晚上8点", "cron(0 20 ? * MON,TUE,WED,THU,FRI *)"),
    ("每天下午5点", "cron(0 17 * * ? *)"),
    ("每个工作日早上8:30", "cron(30 8 ? * MON,TUE,WED,THU,FRI *)"),
    ("每月1号", "cron(0 9 1 * ? *)"),
    ("every Monday at 9am", "cron(0 9 ? * MON *)"),
    ("every Monday 09:00", "cron(0 9 ? * MON *)"),
    ("every Tuesday and Thursday at 2:15 pm", "cron(15 14 ? * TUE,THU *)"),
    ("every day at 6pm", "cron(0 18 * * ? *)"),
    ("every weekday at 8:30", "cron(30 8 ? * MON,TUE,WED,THU,FRI *)"),
    ("every month on the 15th at 10am", "cron(0 10 15 * ? *)"),
    # one-time: relative days, weekdays (this / next), calendar dates, offsets, ISO, a time alone
    ("明天上午10点", "at(2026-12-03T10:00:00)"),
    ("后天中午12点", "at(2026-12-04T12:00:00)"),
    ("今晚8点", "at(2026-12-02T20:00:00)"),
    ("周五下午4点", "at(2026-12-04T16:00:00)"),
    ("下周三下午3点半", "at(2026-12-09T15:30:00)"),
    ("12月10日", "at(2026-12-10T09:00:00)"),
    ("1月5日上午9点", "at(2027-01-05T09:00:00)"),
    ("30分钟后", "at(2026-12-02T17:35:00)"),
    ("3天后下午2点", "at(2026-12-05T14:00:00)"),
    ("on Friday at 4pm", "at(2026-12-04T16:00:00)"),
    ("tomorrow at 9:30", "at(2026-12-03T09:30:00)"),
    ("next Tuesday at noon", "at(2026-12-08T12:00:00)"),
    ("on Dec 5 at 10am", "at(2026-12-05T10:00:00)"),
    ("in 2 hours", "at(2026-12-02T19:05:00)"),
    ("2026-12-04T16:00", "at(2026-12-04T16:00:00)"),
    ("下午三点", "at(2026-12-03T15:00:00)"),  # passed today: tomorrow
    ("星期三早上8点", "at(2026-12-09T08:00:00)"),  # today's has passed: next week's
    ("下个月1号", "at(2027-01-01T09:00:00)"),
    ("next week", "at(2026-12-07T09:00:00)"),
    ("on the 15th", "at(2026-12-15T09:00:00)"),
    ("两小时后", "at(2026-12-02T19:05:00)"),
    ("半小时后", "at(2026-12-02T17:35:00)"),
    ("明早9点", "at(2026-12-03T09:00:00)"),
    ("tonight at 8", "at(2026-12-02T20:00:00)"),
    ("每周一三五上午10点", "cron(0 10 ? * MON,WED,FRI *)"),
    ("every Friday at 5 pm", "cron(0 17 ? * FRI *)"),
])
def test_when_phrases_by_kind(phrase: str, expression: str) -> None:
    parsed = parse_when(phrase, NOW_LOCAL)
    assert parsed is not None and schedule_expression(parsed) == expression


@pytest.mark.parametrize(("message", "when", "what"), [
    ("每周一早上9点提醒我清理Query", "每周一早上9点", "清理Query"),
    ("明天上午10点提醒我给P005打电话", "明天上午10点", "给P005打电话"),
    ("提醒我明天10点给P005打电话", "明天10点", "给P005打电话"),
    ("remind me on Friday at 4pm to send the weekly report", "on Friday at 4pm", "send the weekly report"),
    ("remind me to check P003 on Dec 5 at 10am", "on Dec 5 at 10am", "check P003"),
    ("Please remind me tomorrow at 9:30 to call the site", "tomorrow at 9:30", "call the site"),
    ("Can you remind me on Thursday to order supplies?", "on Thursday", "order supplies"),
    ("remind me to call P005 tomorrow at 10am", "tomorrow at 10am", "call P005"),
    ("提醒我每周一早上9点清理Query", "每周一早上9点", "清理Query"),
])
def test_a_reminder_request_splits_into_when_and_what(message: str, when: str, what: str) -> None:
    assert split_reminder_request(message) == (when, what)


@pytest.mark.parametrize("message", ["P001 入组了吗？", "What did we decide last week?", "这个提醒很有用"])
def test_other_messages_are_no_reminder_requests(message: str) -> None:
    assert split_reminder_request(message) is None


@pytest.mark.parametrize("phrase", ["25点", "at 13pm", "2月30日"])
def test_impossible_times_are_errors(phrase: str) -> None:
    with pytest.raises(ValueError):
        parse_when(phrase, NOW_LOCAL)


def test_cron_round_trip_and_next_occurrence() -> None:
    rec = Recurrence(9, 0, weekdays=(0,))
    assert recurrence_from_cron(cron_expression(rec)) == rec
    assert rec.next_after(NOW_LOCAL) == datetime(2026, 12, 7, 9, 0)
    assert Recurrence(9, 0, day_of_month=31).next_after(datetime(2027, 2, 1)) == datetime(2027, 3, 31, 9, 0)


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(("text", "when", "why"), [
    ("回电话", "昨天上午10点", "past"),
    ("回电话", "2026-12-01T10:00", "past"),
    ("回电话", "某个时候", "no date or time"),
    ("回电话", "25点", "cannot be used"),
    ("x" * 501, "明天上午10点", "limit is 500"),
    ("   ", "明天上午10点", "empty"),
])
def test_bad_input_is_refused_and_nothing_is_scheduled(text: str, when: str, why: str) -> None:
    deps, store, scheduler = reminder_deps(NOW)
    with pytest.raises(InvalidInput, match=why):
        schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text=text, when=when)
    assert store.items == {} and scheduler.schedules == {}


def test_the_51st_active_reminder_is_refused() -> None:
    deps, store, scheduler = reminder_deps(NOW)
    for i in range(50):
        schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text=f"任务 {i}", when="明天上午10点")
    with pytest.raises(InvalidInput, match="limit is 50"):
        schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text="第51个", when="明天上午10点")
    assert len(scheduler.schedules) == 50
    # another user is not limited by u1's reminders
    schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u2", text="第51个", when="明天上午10点")
    assert len(store.items) == 51


def test_asking_twice_for_the_same_reminder_schedules_it_once() -> None:
    deps, store, scheduler = reminder_deps(NOW)
    first = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text="清理Query", when="每周一早上9点")
    again = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text="清理Query", when="每周一早上9点")
    assert again.existing and again.reminder.reminder_id == first.reminder.reminder_id
    assert len(scheduler.schedules) == 1


# ----------------------------------------------------------------------------- quiet times
def _line(text: str, tag: str | None = None, section: str = "User Preferences") -> HotMemoryLine:
    return hot_line("l-" + text[:4], section, text, source="distilled", tag=tag)


def test_a_pi_weekend_rule_moves_a_saturday_reminder_to_monday_9() -> None:
    # Given a PI whose role says 周末别发消息, asking for Saturday 10:00
    deps, store, scheduler = reminder_deps(NOW)
    lines = [_line("周末别发消息", tag="PI")]
    done = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u-pi", study_role="PI", text="看周报",
                             when="周六上午10点", hot_lines=lines)
    # Then it fires next Monday 09:00 local, and the answer says so
    assert done.moved and done.reminder.expression == "at(2026-12-07T09:00:00)"
    assert done.reminder.next_fire_at == datetime(2026, 12, 7, 1, 0, tzinfo=UTC)
    assert "周末别发消息" in done.message() and "2026-12-07 09:00" in done.message()
    # ... while a CRC asking the same is not moved
    crc = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u-crc", study_role="CRC", text="看周报",
                            when="周六上午10点", hot_lines=lines)
    assert not crc.moved and crc.reminder.expression == "at(2026-12-05T10:00:00)"


def test_the_owners_role_comes_from_their_membership_when_the_turn_has_none() -> None:
    deps, store, _ = reminder_deps(NOW)
    store.roles[("p1", "u-pi")] = "PI"
    done = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u-pi", text="看周报", when="周日上午10点",
                             hot_lines=[_line("周末别发消息", tag="PI")])
    assert done.moved and done.reminder.expression == "at(2026-12-07T09:00:00)"


def test_a_weekend_rule_turns_a_daily_recurrence_into_weekdays_and_a_saturday_one_into_monday() -> None:
    rules = quiet_rules("u1", None, [_line("No messages on weekends please")])
    assert shift_recurrence(Recurrence(17, 0), rules) == Recurrence(17, 0, weekdays=(0, 1, 2, 3, 4))
    assert shift_recurrence(Recurrence(10, 0, weekdays=(5,)), rules) == Recurrence(9, 0, weekdays=(0,))


def test_quiet_hours_move_a_late_reminder_to_the_next_morning() -> None:
    rules = quiet_rules("u1", "CRC", [_line("晚上10点后不要发消息", tag="CRC"), _line("早上8点前别打扰我", tag="CRC")])
    assert (rules.after, rules.before) == (22, 8)
    assert next_allowed(datetime(2026, 12, 2, 23, 0), rules) == datetime(2026, 12, 3, 9, 0)
    assert next_allowed(datetime(2026, 12, 3, 7, 0), rules) == datetime(2026, 12, 3, 9, 0)
    assert next_allowed(datetime(2026, 12, 3, 14, 0), rules) == datetime(2026, 12, 3, 14, 0)


def test_lines_of_other_roles_and_sections_do_not_apply() -> None:
    lines = [_line("周末别发消息", tag="PI"), _line("周末别发消息", section="Lessons Learned")]
    rules = quiet_rules("u1", "CRC", lines)
    assert not rules.any


# ----------------------------------------------------------------------------- list, cancel, deliver
def test_cancel_is_for_the_owner_or_an_admin_and_deletes_the_schedule() -> None:
    deps, store, scheduler = reminder_deps(NOW)
    done = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text="清理Query", when="每周一早上9点")
    rid = done.reminder.reminder_id
    with pytest.raises(Forbidden):
        cancel_reminder(deps, "p1", rid, user_id="u2", admin=False)
    assert list_reminders(deps, "p1", user_id="u2", admin=False) == []
    assert [r.reminder_id for r in list_reminders(deps, "p1", user_id="u2", admin=True)] == [rid]
    cancelled = cancel_reminder(deps, "p1", rid, user_id="admin-1", admin=True)
    assert cancelled.status == "cancelled" and scheduler.schedules == {}
    assert list_reminders(deps, "p1", user_id="u1", admin=False) == []


def test_delivery_marks_a_one_time_reminder_done_and_moves_a_recurring_one_on() -> None:
    deps, store, _ = reminder_deps(NOW)
    once = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text="回电话", when="明天上午10点")
    weekly = schedule_reminder(deps, project_id="p1", time_zone=SH, owner="u1", text="清理Query", when="每周一早上9点")
    channel = RecordingChannel()
    deps.now.at = datetime(2026, 12, 7, 1, 0, tzinfo=UTC)  # type: ignore[attr-defined]  # Monday 09:00 local
    assert deliver(deps, channel, "p1", once.reminder.reminder_id)["status"] == "delivered"
    assert deliver(deps, channel, "p1", weekly.reminder.reminder_id)["status"] == "delivered"
    assert store.get_reminder("p1", once.reminder.reminder_id).status == "done"  # type: ignore[union-attr]  # None fails
    nxt = store.get_reminder("p1", weekly.reminder.reminder_id)
    assert nxt is not None and nxt.status == "active" and nxt.next_fire_local == "2026-12-14T09:00"
    # a duplicate delivery of the same occurrence, and a firing of a done reminder, are skipped
    assert deliver(deps, channel, "p1", weekly.reminder.reminder_id)["reason"] == "duplicate"
    assert deliver(deps, channel, "p1", once.reminder.reminder_id)["status"] == "skipped"
    assert len(channel.delivered) == 2


# ----------------------------------------------------------------------------- a chat turn, offline
def _chat(message: str, *, lines: list[HotMemoryLine] | None = None) -> tuple[str, list[str]]:
    repo = InMemoryStore()
    seed_project(repo, hot_lines=lines)
    deps = make_deps(repo)
    rdeps, store, scheduler = reminder_deps(NOW)
    deps.reminders = rdeps
    deps.now = lambda: NOW
    from agent_memory.chat.turn import handle_message

    result = handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=message,
                            patient_id=None, deadline=None)
    return result.reply, [r.expression for r in scheduler.schedules.values()]


@pytest.mark.parametrize(("message", "expression", "says"), [
    ("每周一早上9点提醒我清理Query", "cron(0 9 ? * MON *)", "已设置提醒「清理Query」"),
    ("明天上午10点提醒我给P005打电话", "at(2026-12-03T10:00:00)", "已设置提醒「给P005打电话」"),
    ("remind me on Friday at 4pm to send the weekly report", "at(2026-12-04T16:00:00)",
     'Reminder set: "send the weekly report"'),
])
def test_the_offline_provider_schedules_zh_and_en_requests(message: str, expression: str, says: str) -> None:
    reply, expressions = _chat(message)
    assert expressions == [expression]
    assert says in reply and "Asia/Shanghai" in reply


def test_a_past_time_in_chat_is_answered_and_nothing_is_scheduled() -> None:
    reply, expressions = _chat("昨天上午10点提醒我给P005打电话")
    assert expressions == [] and "没有设置提醒" in reply and "in the past" in reply


def test_a_weekend_rule_in_hot_memory_moves_a_chat_reminder_and_the_reply_says_so() -> None:
    lines = [hot_line("l1", "User Preferences", "周末别发消息", source="distilled")]
    reply, expressions = _chat("周六上午10点提醒我看周报", lines=lines)
    assert expressions == ["at(2026-12-07T09:00:00)"]
    assert "顺延" in reply and "周末别发消息" in reply


def test_listing_and_cancelling_through_chat() -> None:
    repo = InMemoryStore()
    seed_project(repo)
    deps = make_deps(repo)
    rdeps, store, scheduler = reminder_deps(NOW)
    deps.reminders = rdeps
    deps.now = lambda: NOW
    from agent_memory.chat.turn import handle_message

    def say(text: str) -> str:
        return handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=text,
                              patient_id=None, deadline=None).reply

    say("每天下午5点提醒我填写日志")
    (rid,) = [r.reminder_id for r in store.items.values()]
    assert rid in say("我的提醒有哪些？")
    assert "已取消" in say(f"取消提醒 {rid}")
    assert scheduler.schedules == {} and "没有进行中的提醒" in say("我的提醒有哪些？")


# ----------------------------------------------------------------------------- robustness
_VOCABULARY = (
    "每周 每天 每月 下周 下个月 周 星期 明天 后天 今晚 上午 下午 晚上 点 半 分 号 日 月 年 后 前 "
    "小时 分钟 天 一 三 五 十 "
    "0 9 12 25 31 : ： - T at on in every next this the pm am noon Monday fri Dec 15th weekday tomorrow hours "
    "minutes 2026-02-30 2026-12-04T16:00"
)
_PIECES = [*_VOCABULARY.split(), " "]


def test_any_phrase_parses_or_is_a_value_error() -> None:
    # 3,000 phrases assembled from the parser's own vocabulary (fixed seed): each one parses to a
    # valid expression, to None, or raises ValueError (which the tools answer as a refusal), never
    # anything else.
    rng = random.Random(15)
    for _ in range(3000):
        phrase = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 8)))
        try:
            parsed = parse_when(phrase, NOW_LOCAL)
        except ValueError:
            continue
        if parsed is not None:
            expression = schedule_expression(parsed)
            assert expression.startswith(("at(", "cron(")), phrase
            if parsed.recurrence is not None:
                assert recurrence_from_cron(expression) == parsed.recurrence, phrase
