"""The admin function's routes: the hot-memory editor and its kill switch (delete any line, AI or
admin), its revisions, the evidence of a line or a review item, the distillation review queue, the
audit trail, weekly report corrections and revisions, the team console's files, who the caller is
(``/v1/me``), the projects and their members (create a project, add / replace / remove members),
the project's clinical source and reminder webhook, and the project's WeCom channel (its
credentials written into the project's secret, never read back: ``agent_memory.channels.wecom``).

Why a function of its own: it is the only HTTP path that WRITES the MemoryTable and the project
secrets, so it alone gets write permissions there (nothing on the sessions table, a read of the
flow log's cited messages only, no secret read, no LLM); the read-only ApiFunction stays
read-only. Each route is one call into ``agent_memory.hot_memory`` (editor, revisions, review,
evidence), ``agent_memory.history.corrections``, ``agent_memory.projects``,
``agent_memory.reminders.webhook`` or ``agent_memory.channels.wecom``; the console's files are
``agent_memory.http.console``'s.
"""

# No ``from __future__ import annotations``: Powertools resolves the body, query and dependency
# models from these annotations at runtime.
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from agent_memory.channels import wecom as wecom_channel
from agent_memory.channels.wecom import WeComSettingsDeps
from agent_memory.domain.records import Page, ReviewEntry
from agent_memory.domain.wecom import WeComChannelSettings
from agent_memory.history import corrections
from agent_memory.history.corrections import REPORT_MAX_BYTES
from agent_memory.history.reports import ISO_WEEK_PATTERN
from agent_memory.hot_memory import editor, evidence, review, revisions
from agent_memory.hot_memory.editor import MARKDOWN_MAX_BYTES, REASON_MAX_BYTES, parse_if_match
from agent_memory.hot_memory.review import APPROVED_TEXT_MAX_BYTES
from agent_memory.http.admin_requests import (
    ApproveRequest,
    Cursor,
    IfMatch,
    MemoryPutRequest,
    OptionalIfMatch,
    ReasonQuery,
    ReasonRequest,
    ReportCorrectionRequest,
    ReviewStatus,
    change_response,
)
from agent_memory.http.console import CONSOLE_PAGE, ConsoleSite, redirect
from agent_memory.http.guard import CurrentCaller, guarded_resolver, member_lookup
from agent_memory.http.powertools import APIGatewayHttpResolver, Depends, Header, Response, content_types
from agent_memory.http.powertools import Path as PathParameter
from agent_memory.http.project_requests import (
    CreateProjectRequest,
    PutMemberRequest,
    ReminderWebhookRequest,
    UpdateProjectRequest,
)
from agent_memory.http.requests import Limit
from agent_memory.http.responses import created, etag, model_response
from agent_memory.http.routing import Routes
from agent_memory.observability import metrics
from agent_memory.ports import AdminStore, MemberStore
from agent_memory.projects import members
from agent_memory.projects.clinical_source import ClinicalDataPatch, ClinicalSourceDeps
from agent_memory.reminders import webhook
from agent_memory.reminders.webhook import WebhookDeps

routes = Routes()
_P = "/v1/projects/<project_id>"


@dataclass(frozen=True)
class AdminFunctionDeps:
    """The admin function's collaborators (built by ``wiring.build_admin_function``): the only
    HTTP writer of the MemoryTable (hot memory, reports, projects and members) and of the project
    secrets (``clinical``: the REDCap token; ``webhooks``: the reminder webhook and its key)."""

    store: AdminStore
    members: MemberStore
    hot_memory_token_cap: int
    clinical: ClinicalSourceDeps
    webhooks: WebhookDeps
    clock: Callable[[], datetime]
    wecom: WeComSettingsDeps
    #: the Cognito Hosted UI the console signs in with (domain, app client id); None: tokens only
    hosted_ui_domain: str | None = None
    console_client_id: str | None = None


def function_deps() -> AdminFunctionDeps:
    """The function's collaborators: given to the resolver by :func:`admin_app`."""
    raise RuntimeError("the admin function's collaborators are given by admin_app()")


def console_site() -> ConsoleSite:
    """The console's files: given to the resolver by :func:`admin_app`."""
    raise RuntimeError("the console's files are given by admin_app()")


Deps = Annotated[AdminFunctionDeps, Depends(function_deps)]
_REASON = f"reason over {REASON_MAX_BYTES:,} UTF-8 bytes"
#: A hot-memory version in a path (what ``ETag`` and ``If-Match`` name).
Version = Annotated[int, PathParameter(ge=0, le=999_999_999_999)]
#: A week of the history book in a path.
IsoWeek = Annotated[str, PathParameter(pattern=ISO_WEEK_PATTERN)]
Console = Annotated[ConsoleSite, Depends(console_site)]
#: A path segment of a console file (the path gate admits ids only: no "/", no "..").
Segment = Annotated[str, PathParameter(max_length=128)]
IfNoneMatch = Annotated[str | None, Header(alias="If-None-Match", max_length=1024)]
_FILE = {
    200: {"description": "a file of the console (HTML, CSS, JavaScript or JSON)", "content": {
        "text/html": {}, "text/css": {}, "text/javascript": {}, "application/json": {},
    }},
    304: {"description": "not modified: the browser's copy (If-None-Match) is current"},
    404: {"description": "the console has no such file"},
}
_REDIRECT = {302: {"description": "to the console's page, console/index.html (Location, relative)"}}


# -------------------------------------------------------------------------------- console
@routes.get("/console", "public", responses=_REDIRECT)
def console_page() -> Response[str]:
    """The team console: a redirect to its page (public: static files; its data calls carry the
    bearer token)."""
    return redirect(CONSOLE_PAGE)


@routes.get("/admin", "public", responses=_REDIRECT)
def admin_page() -> Response[str]:
    """Where the hot-memory editor was: the team console replaced it (a redirect)."""
    return redirect(CONSOLE_PAGE)


@routes.get("/console/<name>", "public", responses=_FILE)
def console_file(name: Segment, site: Console, if_none_match: IfNoneMatch = None) -> Response[str]:
    """A file of the console's folder (``index.html``, ``console.css``, ``config.json``: how to sign in)."""
    return site.answer(name, if_none_match)


@routes.get("/console/<folder>/<name>", "public", responses=_FILE)
def console_folder_file(
    folder: Segment, name: Segment, site: Console, if_none_match: IfNoneMatch = None
) -> Response[str]:
    """A file one folder down (``js/``, ``locales/``, ``vendor/``)."""
    return site.answer(f"{folder}/{name}", if_none_match)


@routes.get("/console/<folder>/<subfolder>/<name>", "public", responses=_FILE)
def console_subfolder_file(
    folder: Segment, subfolder: Segment, name: Segment, site: Console, if_none_match: IfNoneMatch = None
) -> Response[str]:
    """A file two folders down (``js/views/``)."""
    return site.answer(f"{folder}/{subfolder}/{name}", if_none_match)


# ------------------------------------------------------------------------------------ who
@routes.get("/v1/me", "signed_in")
def who_am_i(caller: CurrentCaller, deps: Deps) -> Response[str]:
    """Who the token says the caller is, whether a platform operator, and the projects they are a
    member of with their project and study roles (any signed-in user; their own memberships only)."""
    return model_response(members.who_am_i(deps.members, user_id=caller.user_id, operator=caller.operator))


# ----------------------------------------------------------------------------- hot memory
@routes.put(f"{_P}/memory", "admin", rules={
    413: f"markdown over {MARKDOWN_MAX_BYTES:,} or {_REASON}",
    422: "over_token_cap: the document would pass the hot-memory token cap (HOT_MEMORY_TOKEN_CAP, 2,000 by default)",
})
def put_memory(
    project_id: str, body: MemoryPutRequest, caller: CurrentCaller, deps: Deps, if_match: IfMatch
) -> Response[str]:
    """Replace the document (admins; ``If-Match``: the version edited). Unchanged lines keep their
    provenance; new or edited lines become admin lines. 409 if someone saved first, 422
    ``over_token_cap`` over the cap (nothing stored), 428 without ``If-Match``."""
    result = editor.put_memory(
        deps.store, project_id, markdown=body.markdown, reason=body.reason, if_match=parse_if_match(if_match),
        actor=caller.user_id, now=deps.clock(), cap=deps.hot_memory_token_cap,
    )
    return change_response(result, "HotMemoryAdminEdits")


@routes.delete(f"{_P}/memory/lines/<line_id>", "admin", rules={413: _REASON})
def delete_line(
    project_id: str, line_id: str, caller: CurrentCaller, deps: Deps, if_match: IfMatch, reason: ReasonQuery = None
) -> Response[str]:
    """The kill switch: delete one line, AI or admin (admins; ``If-Match``; optional ``?reason=``)."""
    result = editor.delete_line(
        deps.store, project_id, line_id, reason=reason, if_match=parse_if_match(if_match),
        actor=caller.user_id, now=deps.clock(), cap=deps.hot_memory_token_cap,
    )
    return change_response(result, "HotMemoryLinesDeleted")


@routes.get(f"{_P}/memory/revisions", "admin", rules={422: "a cursor this listing did not issue"})
def list_revisions(project_id: str, deps: Deps, limit: Limit = 20, cursor: Cursor = None) -> Response[str]:
    """Stored versions, newest first (admins; ``?limit=&cursor=``; ``next_cursor`` for the next page)."""
    return model_response(revisions.list_revisions(deps.store, project_id, limit=limit, cursor=cursor))


@routes.get(f"{_P}/memory/revisions/<version>", "admin")
def get_revision(project_id: str, version: Version, deps: Deps) -> Response[str]:
    """One version: its Markdown, lines and diff against the version before it (admins)."""
    view = revisions.get_revision(deps.store, project_id, version)
    return model_response(view, etag=etag(view.version))


@routes.post(f"{_P}/memory/revisions/<version>/restore", "admin", rules={
    413: _REASON,
    422: "over_token_cap: the restored document would pass the hot-memory token cap",
})
def restore_revision(
    project_id: str, version: Version, caller: CurrentCaller, deps: Deps, if_match: IfMatch,
    body: ReasonRequest | None = None,
) -> Response[str]:
    """A NEW version equal to ``version`` (admins; ``If-Match``: the current version; optional
    body ``{"reason"}``)."""
    result = revisions.restore_revision(
        deps.store, project_id, version, reason=body.reason if body else None, if_match=parse_if_match(if_match),
        actor=caller.user_id, now=deps.clock(), cap=deps.hot_memory_token_cap,
    )
    return change_response(result, "HotMemoryRestores")


@routes.get(f"{_P}/memory/review", "admin")
def list_review(project_id: str, deps: Deps, status: ReviewStatus = None) -> Response[str]:
    """The distillation candidates held for review (admins; ``?status=pending`` to filter); each
    pending item names the System Rules approving it as proposed would relax (``relaxes``)."""
    return model_response(Page[ReviewEntry](items=review.list_review(deps.store, project_id, status=status)))


@routes.post(
    f"{_P}/memory/review/<item_id>/approve", "admin",
    rules={
        413: f"{_REASON}, or text over {APPROVED_TEXT_MAX_BYTES:,} UTF-8 bytes",
        422: "confirmation_required (an item that would relax System Rules, without confirm), over_token_cap, or "
             "a text that is blank or starts a heading or list of its own",
    },
    description=(
        "Add the candidate as an admin line (same cap check as every write; `If-Match` optional), as proposed "
        "or reworded by the admin (`text`). An item that would relax System Rules (as reworded) needs "
        "`\"confirm\": true`: without it 422 `confirmation_required` names the rules (`rules`: line id and "
        "text) and `current_version`."
    ),
)
def approve_review(
    project_id: str, item_id: str, caller: CurrentCaller, deps: Deps, if_match: OptionalIfMatch = None,
    body: ApproveRequest | None = None,
) -> Response[str]:
    """Add the candidate, or the admin's rewording of it (``text``), as an admin line (admins;
    ``If-Match`` optional); one that would relax System Rules only with ``"confirm": true`` (see
    ``review.approve_review``)."""
    asked = body or ApproveRequest()
    result = review.approve_review(
        deps.store, project_id, item_id, reason=asked.reason,
        if_match=parse_if_match(if_match) if if_match else None,
        actor=caller.user_id, now=deps.clock(), cap=deps.hot_memory_token_cap, confirm=asked.confirm,
        text=asked.text,
    )
    metrics.add_metric(name="ReviewApproved", unit="Count", value=1)
    return change_response(result, "HotMemoryAdminEdits")


@routes.post(f"{_P}/memory/review/<item_id>/reject", "admin", rules={413: _REASON})
def reject_review(
    project_id: str, item_id: str, caller: CurrentCaller, deps: Deps, body: ReasonRequest | None = None
) -> Response[str]:
    """Reject the candidate (admins; optional body ``{"reason"}``; the hot memory is not touched)."""
    decided = review.reject_review(
        deps.store, project_id, item_id, reason=body.reason if body else None, actor=caller.user_id,
        now=deps.clock(),
    )
    metrics.add_metric(name="ReviewRejected", unit="Count", value=1)
    return model_response(decided)


@routes.get(f"{_P}/memory/audit", "admin", rules={422: "a cursor this listing did not issue"})
def list_audit(project_id: str, deps: Deps, limit: Limit = 50, cursor: Cursor = None) -> Response[str]:
    """Admin changes, newest first: who, when, what, why (admins)."""
    return model_response(editor.list_audit(deps.store, project_id, limit=limit, cursor=cursor))


@routes.get(f"{_P}/memory/lines/<line_id>/evidence", "admin")
def line_evidence(project_id: str, line_id: str, deps: Deps) -> Response[str]:
    """The messages a line of the current hot memory cites, as text: who said what, when, in which
    session (admins; a message the flow log no longer holds is listed with ``kept: false``)."""
    return model_response(evidence.line_evidence(deps.store, project_id, line_id))


@routes.get(f"{_P}/memory/review/<item_id>/evidence", "admin")
def review_evidence(project_id: str, item_id: str, deps: Deps) -> Response[str]:
    """The messages a review item cites, as text (admins; as for a line's evidence)."""
    return model_response(evidence.review_evidence(deps.store, project_id, item_id))


# ---------------------------------------------------------------------------- history book
@routes.put(f"{_P}/reports/<iso_week>", "admin", rules={
    413: f"summary over {REPORT_MAX_BYTES:,} or {_REASON}",
})
def correct_report(
    project_id: str, iso_week: IsoWeek, body: ReportCorrectionRequest, caller: CurrentCaller, deps: Deps,
    if_match: IfMatch,
) -> Response[str]:
    """Correct a weekly report (admins; ``If-Match``: its revision); the previous text is kept."""
    view = corrections.correct_report(
        deps.store, project_id, iso_week, summary=body.summary, reason=body.reason, if_match=parse_if_match(if_match),
        actor=caller.user_id, now=deps.clock(),
    )
    if view.changed:
        metrics.add_metric(name="ReportsCorrected", unit="Count", value=1)
    return model_response(view, etag=etag(view.revision))


@routes.get(f"{_P}/reports/<iso_week>/revisions", "member")
def report_revisions(project_id: str, iso_week: IsoWeek, deps: Deps) -> Response[str]:
    """Every revision of the week's report, newest first: its text, who made it, when, and why
    (the correction's reason), and when a later correction replaced it (members)."""
    return model_response(corrections.report_revisions(deps.store, project_id, iso_week))


# ------------------------------------------------------------------------ projects and members
@routes.post("/v1/projects", "operator", status_code=201)
def create_project(body: CreateProjectRequest, deps: Deps) -> Response[dict[str, Any]]:
    """Create a project (platform operators; 201); 409 if the id exists, 422 for an unknown time
    zone or a bad id. It has no members yet: add its first admin with PUT .../members/{user_id}.
    An IIT project starts with the baseline System Rules (hot memory version 1, ``rules_language``)."""
    project = members.create_project(
        deps.members, project_id=body.project_id, name=body.name, time_zone=body.time_zone, kind=body.kind,
        now=deps.clock(), rules_language=body.rules_language,
    )
    metrics.add_metric(name="ProjectsCreated", unit="Count", value=1)
    return created(project.model_dump(mode="json"))


@routes.get(_P, "member")
def get_project(project_id: str, deps: Deps) -> Response[str]:
    """The project: name, time zone, kind, clinical data source (members)."""
    return model_response(members.get_project(deps.members, project_id))


@routes.patch(_P, "admin", rules={
    422: "clinical_data: token_secret given (the service names the token's secret); api_url refused by the egress "
         "policy (https only; no link-local, metadata, loopback, multicast, reserved or unlisted private address, "
         "EgressAllowPrivate) or not REDCap's .../api/; a new source, a changed api_url or a legacy source "
         "(token_secret) without `token`",
})
def update_project(project_id: str, body: UpdateProjectRequest, deps: Deps) -> Response[str]:
    """Change the name, the time zone, the clinical data source or the identifier policy
    (``identifiers``: ``redact`` | ``reject``) (admins; fields left out stay; ``clinical_data: null``
    removes the source). The REDCap token is write-only: stored in the project's own secret, bound
    to the api_url it was sent with, never returned (``token_set`` / ``token_updated_at`` say it is
    there)."""
    clinical: ClinicalDataPatch | None | Literal["keep"] = "keep"
    if "clinical_data" in body.model_fields_set:  # null: remove the source
        clinical = body.clinical_data.to_patch() if body.clinical_data else None
    project = members.update_project(
        deps.members, project_id, name=body.name, time_zone=body.time_zone, clinical_data=clinical,
        clinical=deps.clinical, identifiers=body.identifiers, now=deps.clock(),
    )
    if clinical != "keep":
        metrics.add_metric(name="ClinicalSourceChanges", unit="Count", value=1)
    return model_response(project)


# ---------------------------------------------------------------------------- reminder webhook
@routes.put(f"{_P}/reminder-webhook", "admin", rules={
    422: "url refused by the egress policy (https only; no link-local, metadata, loopback, multicast, reserved or "
         "unlisted private address, EgressAllowPrivate)",
})
def put_reminder_webhook(project_id: str, body: ReminderWebhookRequest, deps: Deps) -> Response[dict[str, Any]]:
    """Set or replace the project's reminder webhook (admins): a new signing key is generated and
    shown in this response only (``signing_key``); every firing is POSTed to ``url`` signed with it."""
    members.get_project(deps.members, project_id)
    done = webhook.put_reminder_webhook(deps.webhooks, project_id, body.url, now=deps.clock())
    metrics.add_metric(name="ReminderWebhooksSet", unit="Count", value=1)
    return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=done.shown_once(),
                    headers={"Cache-Control": "no-store"})


@routes.delete(f"{_P}/reminder-webhook", "admin", status_code=204)
def delete_reminder_webhook(project_id: str, deps: Deps) -> Response[str]:
    """Remove the project's reminder webhook (admins; 204; 404 when there is none): deliveries stop
    and its signing key is deleted (with the recovery window)."""
    members.get_project(deps.members, project_id)
    webhook.delete_reminder_webhook(deps.webhooks, project_id)
    return Response(status_code=204, body="", headers={"Cache-Control": "no-store"})


@routes.get(f"{_P}/members", "member")
def list_members(project_id: str, deps: Deps) -> Response[str]:
    """The project's members with their project and study roles (members)."""
    return model_response(members.list_members(deps.members, project_id))


@routes.put(f"{_P}/members/<user_id>", "admin_or_operator", rules={
    409: "the last admin would be demoted, or another member of the project has the wecom_userid",
}, responses={
    200: {"description": "the membership was replaced", "content": {"application/json": {}}},
    201: {"description": "the member was added", "content": {"application/json": {}}},
})
def put_member(
    project_id: str, user_id: str, body: PutMemberRequest, caller: CurrentCaller, deps: Deps
) -> Response[str]:
    """Add (201) or replace (200) a member (the project's admins, or a platform operator: the first
    admin); 409 when it would demote the last admin."""
    change = members.put_member(
        deps.members, project_id, user_id, project_role=body.project_role, study_role=body.study_role,
        display_name=body.display_name, actor=caller.user_id, now=deps.clock(), wecom_userid=body.wecom_userid,
    )
    response = model_response(change.member)
    if change.created:
        response.status_code = 201
        metrics.add_metric(name="MembersAdded", unit="Count", value=1)
    return response


@routes.delete(f"{_P}/members/<user_id>", "admin", status_code=204)
def remove_member(project_id: str, user_id: str, deps: Deps) -> Response[str]:
    """Remove a member (admins; 204): their next request is refused. 409 for the last admin."""
    members.remove_member(deps.members, project_id, user_id)
    metrics.add_metric(name="MembersRemoved", unit="Count", value=1)
    return Response(status_code=204, body="", headers={"Cache-Control": "no-store"})


# ------------------------------------------------------------------------------ WeCom channel
@routes.put(f"{_P}/channels/wecom", "admin")
def put_wecom_channel(
    project_id: str, body: WeComChannelSettings, caller: CurrentCaller, deps: Deps
) -> Response[str]:
    """Set or replace the project's WeCom channel (admins): corp id, agent id, and write-only the
    callback Token and EncodingAESKey, the application's Secret and an optional group robot's key
    (stored by the service in the project's own secret, never returned). The answer is what GET
    shows, with the callback path to enter in WeCom's console."""
    view = wecom_channel.put_wecom_channel(deps.wecom, project_id, body, actor=caller.user_id, now=deps.clock())
    metrics.add_metric(name="WeComChannelsSet", unit="Count", value=1)
    return model_response(view)


@routes.get(f"{_P}/channels/wecom", "admin")
def get_wecom_channel(project_id: str, deps: Deps) -> Response[str]:
    """What is set for the project's WeCom channel (admins): no secret, only which are set; 404 when none."""
    return model_response(wecom_channel.get_wecom_channel(deps.wecom.store, project_id))


@routes.delete(f"{_P}/channels/wecom", "admin", status_code=204)
def delete_wecom_channel(project_id: str, deps: Deps) -> Response[str]:
    """Remove the project's WeCom channel (admins; 204): callbacks are refused from now on, nothing
    more is sent, and its secret is scheduled for deletion (the recovery window applies)."""
    wecom_channel.delete_wecom_channel(deps.wecom, project_id)
    return Response(status_code=204, body="", headers={"Cache-Control": "no-store"})


def admin_app(deps: AdminFunctionDeps, *, console_folder: Path) -> APIGatewayHttpResolver:
    """The admin function's event handler; ``console_folder``: the console's static files (each
    read on its first request)."""
    site = ConsoleSite(console_folder, hosted_ui_domain=deps.hosted_ui_domain, client_id=deps.console_client_id)
    return guarded_resolver(
        routes, membership=member_lookup(deps.members), provide={function_deps: deps, console_site: site},
    )
