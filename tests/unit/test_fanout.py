"""The job fan-out's periods and plan (pure: in-memory fakes, no AWS) and the SQS adapter's retries
of failed entries (a scripted client): the run's local day (Berlin's daylight-saving days
included), ISO weeks across the year boundary and week 53, dedupe, backfill of one project."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from agent_memory.adapters.sqs import SqsJobQueue
from agent_memory.domain.errors import EnqueueFailed
from agent_memory.domain.jobs import JobRequest, ScheduleInput, request_key
from agent_memory.jobs.calendar import local_day_window
from agent_memory.jobs.fanout import PRUNE_LOOKBACK_DAYS, activity_dates, dispatch, plan_requests, run_date_of
from tests.fakes import InMemoryJobQueue, InMemoryStore, Recorder


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def days(first: str, n: int) -> list[date]:
    start = date.fromisoformat(first)
    return [start + timedelta(days=i) for i in range(n)]


def active(markers: dict[date, list[str]]) -> Recorder:
    """An in-memory store holding these activity markers (by local date), recording its lookups."""
    store = InMemoryStore()
    for day, projects in markers.items():
        for project_id in projects:
            store.mark_active(project_id, day, at(f"{day.isoformat()}T12:00:00+08:00"))
    return Recorder(store)


def lookups(activity: Recorder) -> list[list[date]]:
    """The dates of every ``active_projects`` lookup, in order."""
    return [list(c.args[0]) for c in activity.calls if c.name == "active_projects"]


# ----------------------------------------------------------- run date: the local date it fires
def test_b17_run_date_is_the_local_date_when_the_schedule_fires() -> None:
    # Given the distill schedule firing at 02:00 Asia/Shanghai on 2026-03-11 (18:00Z the day before),
    now = at("2026-03-11T02:00:00+08:00")
    # When the run date is computed, Then it is the local date, and the day distilled is 2026-03-10
    run_date = run_date_of(ScheduleInput(job="distill", time_zone="Asia/Shanghai"), now)
    assert run_date == date(2026, 3, 11)
    assert activity_dates("distill", run_date) == [date(2026, 3, 10)]
    # whose UTC window is [03-09T16:00Z, 03-10T16:00Z): M1 (03-09T23:30Z) in, M2 (03-10T17:00Z) out.
    start, end = local_day_window(date(2026, 3, 10), "Asia/Shanghai")
    assert start <= at("2026-03-09T23:30:00Z") < end
    assert not start <= at("2026-03-11T01:00:00+08:00") < end


def test_run_date_given_in_the_input_wins_over_the_clock() -> None:
    schedule = ScheduleInput(job="prune", date=date(2026, 1, 5), time_zone="Asia/Shanghai")
    assert run_date_of(schedule, at("2030-06-01T00:00:00Z")) == date(2026, 1, 5)


@pytest.mark.parametrize(
    ("fires_at", "run_date", "distilled"),
    [
        # the 23-hour day (spring forward 2026-03-29): the run on 03-30 distils 03-29
        ("2026-03-30T02:00:00+02:00", date(2026, 3, 30), date(2026, 3, 29)),
        # the run on the DST day itself distils 03-28
        ("2026-03-29T02:00:00+01:00", date(2026, 3, 29), date(2026, 3, 28)),
        # the 25-hour day (fall back 2026-10-25)
        ("2026-10-26T02:00:00+01:00", date(2026, 10, 26), date(2026, 10, 25)),
    ],
)
def test_b17_berlin_runs_around_dst_distil_the_previous_local_day(
    fires_at: str, run_date: date, distilled: date
) -> None:
    schedule = ScheduleInput(job="distill", time_zone="Europe/Berlin")
    assert run_date_of(schedule, at(fires_at)) == run_date
    assert activity_dates("distill", run_date) == [distilled]


def test_b17_berlin_consecutive_runs_cover_every_instant_once() -> None:
    # Given the daily runs of a fortnight around the spring DST change in Berlin,
    zone = ZoneInfo("Europe/Berlin")
    runs = [datetime(2026, 3, 23, 2, 0, tzinfo=zone) + timedelta(days=i) for i in range(14)]
    windows = []
    for fired in runs:
        (day,) = activity_dates("distill", run_date_of(ScheduleInput(job="distill", time_zone="Europe/Berlin"), fired))
        windows.append(local_day_window(day, "Europe/Berlin"))
    # Then the days they distil tile time: each starts where the previous ended (no gap, no overlap).
    assert all(prev[1] == cur[0] for prev, cur in zip(windows, windows[1:], strict=False))
    assert timedelta(hours=23) in {end - start for start, end in windows}


# ------------------------------------------------------------------------------- ISO weeks
@pytest.mark.parametrize(
    ("run_date", "first_day"),
    [
        (date(2026, 3, 16), "2026-03-09"),  # the Monday run archives the previous week
        (date(2026, 3, 18), "2026-03-09"),  # a backfill on Wednesday: still the previous week
        (date(2026, 1, 5), "2025-12-29"),  # 2026-W01 starts in 2025 (year boundary)
        (date(2027, 1, 4), "2026-12-28"),  # 2026-W53: 2026-12-28 .. 2027-01-03
        (date(2027, 1, 11), "2027-01-04"),  # 2027-W01 after the week 53
    ],
)
def test_archive_looks_at_all_seven_days_of_the_previous_iso_week(run_date: date, first_day: str) -> None:
    dates = activity_dates("archive", run_date)
    assert dates == days(first_day, 7)
    assert {d.isocalendar()[1] for d in dates} == {dates[0].isocalendar()[1]}
    assert dates[0].weekday() == 0


def test_prune_looks_at_the_last_week_and_the_run_date() -> None:
    assert activity_dates("prune", date(2026, 3, 16)) == days("2026-03-09", PRUNE_LOOKBACK_DAYS + 1)


# ------------------------------------------------------------------------------------ plan
def test_plan_enqueues_each_active_project_once_sorted() -> None:
    # Given projects active on several days of the archived week, some on many days,
    week = days("2026-03-09", 7)
    activity = active({week[0]: ["p2", "p1"], week[3]: ["p1", "p3"], week[6]: ["p2"],
                             date(2026, 3, 16): ["p-this-week-only"]})
    # When the archive run of 2026-03-16 is planned,
    requests = plan_requests(ScheduleInput(job="archive", time_zone="Asia/Shanghai"), date(2026, 3, 16), activity)
    # Then each project of that week gets one request carrying the run date; others none.
    assert [(r.project_id, r.date) for r in requests] == [(p, date(2026, 3, 16)) for p in ("p1", "p2", "p3")]
    assert lookups(activity) == [week]


def test_backfill_enqueues_one_project_without_reading_the_index() -> None:
    activity = active({})
    schedule = ScheduleInput(job="distill", project_id="p9", date=date(2026, 3, 11), time_zone="Asia/Shanghai")
    sender = InMemoryJobQueue()
    report = dispatch(schedule, activity=activity, sender=sender, clock=lambda: at("2026-03-11T02:00:00+08:00"))
    assert [r.project_id for r in sender.sent] == ["p9"]
    assert lookups(activity) == []
    assert report.backfill and report.enqueued == 1 and report.activity_dates == []


def test_no_active_project_sends_nothing() -> None:
    sender = InMemoryJobQueue()
    report = dispatch(ScheduleInput(job="distill", time_zone="Asia/Shanghai"), activity=active({}),
                      sender=sender, clock=lambda: at("2026-03-11T02:00:00+08:00"))
    assert sender.sent == [] and report.projects == 0 and report.enqueued == 0


def test_request_key_is_stable_per_job_project_and_run_date() -> None:
    request = JobRequest(job="prune", project_id="p1", date=date(2026, 3, 11))
    assert request_key(request) == "prune#p1#2026-03-11"


# ----------------------------------------------------------------------------- SQS adapter
class ScriptedSqs:
    """send_message_batch answers from a script: a set of entry ids to fail per call."""

    def __init__(self, failures: list[dict[str, bool]]) -> None:
        self.failures = failures  # per call: {body project id: sender_fault}
        self.calls: list[list[dict[str, Any]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: N803
        self.calls.append(Entries)
        failing = self.failures[len(self.calls) - 1] if len(self.calls) <= len(self.failures) else {}
        ok, failed = [], []
        for e in Entries:
            project = JobRequest.model_validate_json(e["MessageBody"]).project_id
            if project in failing:
                failed.append({"Id": e["Id"], "SenderFault": failing[project], "Code": "InternalError"})
            else:
                ok.append({"Id": e["Id"], "MessageId": f"m-{e['Id']}"})
        return {"Successful": ok, "Failed": failed}


def _requests(n: int) -> list[JobRequest]:
    return [JobRequest(job="distill", project_id=f"p{i:02d}", date=date(2026, 3, 11)) for i in range(n)]


def test_sqs_batches_of_ten_with_a_stable_key_attribute() -> None:
    sqs = ScriptedSqs([])
    assert SqsJobQueue("q", client=sqs).send(_requests(23)) == 23
    assert [len(c) for c in sqs.calls] == [10, 10, 3]
    first = sqs.calls[0][0]
    assert first["MessageAttributes"]["job_key"] == {"DataType": "String", "StringValue": "distill#p00#2026-03-11"}
    assert JobRequest.model_validate_json(first["MessageBody"]).project_id == "p00"


def test_sqs_resends_only_the_failed_entries() -> None:
    # Given a batch where two entries fail once on the service side,
    sqs = ScriptedSqs([{"p03": False, "p07": False}])
    # When sent, Then the second call carries exactly those two entries, and everything is enqueued.
    assert SqsJobQueue("q", client=sqs, wait_initial_s=0, wait_max_s=0).send(_requests(10)) == 10
    assert len(sqs.calls) == 2
    assert sorted(JobRequest.model_validate_json(e["MessageBody"]).project_id for e in sqs.calls[1]) == ["p03", "p07"]


def test_sqs_gives_up_after_the_attempts_and_raises() -> None:
    sqs = ScriptedSqs([{"p01": False}] * 5)
    with pytest.raises(EnqueueFailed) as err:
        SqsJobQueue("q", client=sqs, entry_attempts=3, wait_initial_s=0, wait_max_s=0).send(_requests(3))
    assert err.value.failed == 1
    assert len(sqs.calls) == 3


def test_sqs_sender_fault_is_not_retried() -> None:
    sqs = ScriptedSqs([{"p01": True}])
    with pytest.raises(EnqueueFailed):
        SqsJobQueue("q", client=sqs, wait_initial_s=0, wait_max_s=0).send(_requests(3))
    assert len(sqs.calls) == 1


# --------------------------------------------------------------- DST: a skipped run is caught up
@pytest.mark.parametrize(
    ("tz", "run_date", "expected"),
    [
        # Scheduler skips 02:00 on 2026-03-29 in Berlin (it does not exist): the next run does its work.
        ("Europe/Berlin", date(2026, 3, 30), [date(2026, 3, 29), date(2026, 3, 30)]),
        ("America/New_York", date(2026, 3, 9), [date(2026, 3, 8), date(2026, 3, 9)]),
        # the 25-hour day and ordinary days: nothing was skipped
        ("Europe/Berlin", date(2026, 10, 26), [date(2026, 10, 26)]),
        ("Europe/Berlin", date(2026, 3, 29), [date(2026, 3, 29)]),
        ("Asia/Shanghai", date(2026, 3, 30), [date(2026, 3, 30)]),
    ],
)
def test_b17_the_run_after_a_spring_forward_day_also_does_the_skipped_run(
    tz: str, run_date: date, expected: list[date]
) -> None:
    from agent_memory.jobs.fanout import run_dates

    assert run_dates("prune", run_date, tz) == expected
    assert run_dates("distill", run_date, tz) == [run_date - timedelta(days=1), run_date]  # always, see below


def test_a_project_behind_the_schedules_zone_has_its_day_distilled_by_the_next_run() -> None:
    # Given the schedule in Asia/Shanghai and a Berlin project active on its 2026-12-08 (the 02:00
    # Shanghai run of 12-09 came at 19:00 Berlin time, while that day was still going on)
    activity = active({date(2026, 12, 8): ["p-berlin"], date(2026, 12, 9): ["p-shanghai"]})
    sender = InMemoryJobQueue()
    # When the next night's run dispatches (02:00 Shanghai on 12-10)
    dispatch(ScheduleInput(job="distill", time_zone="Asia/Shanghai"), activity=activity, sender=sender,
             clock=lambda: at("2026-12-10T02:00:00+08:00"))
    # Then the Berlin project is enqueued again for run date 12-09 (its day 12-08, over by now)
    assert [(r.project_id, r.date.isoformat()) for r in sender.sent] == [
        ("p-berlin", "2026-12-09"), ("p-shanghai", "2026-12-10")]


def test_b17_berlin_dst_day_no_project_day_is_missed() -> None:
    # Given projects active on Saturday 03-28 (distilled by the skipped 03-29 02:00 run) and on the
    # 23-hour Sunday 03-29,
    activity = active({date(2026, 3, 28): ["p-sat", "p-both"], date(2026, 3, 29): ["p-sun", "p-both"]})
    sender = InMemoryJobQueue()
    # When the 03-30 02:00 run dispatches,
    report = dispatch(ScheduleInput(job="distill", time_zone="Europe/Berlin"), activity=activity, sender=sender,
                      clock=lambda: at("2026-03-30T02:00:00+02:00"))
    # Then Saturday's projects get the skipped run's request (run date 03-29 -> day 03-28) and
    # Sunday's their own (run date 03-30 -> the 23-hour day 03-29).
    assert [(r.project_id, r.date.isoformat()) for r in sender.sent] == [
        ("p-both", "2026-03-29"), ("p-sat", "2026-03-29"), ("p-both", "2026-03-30"), ("p-sun", "2026-03-30"),
    ]
    assert report.run_dates == [date(2026, 3, 29), date(2026, 3, 30)]
    assert report.projects == 3 and report.enqueued == 4


def test_archive_in_berlin_is_not_affected_by_dst_sundays() -> None:
    from agent_memory.jobs.fanout import run_dates

    assert run_dates("archive", date(2026, 3, 30), "Europe/Berlin") == [date(2026, 3, 30)]
