// sessions: the project's sessions (newest first, paginated), and one session: its facts, summary
// and every message with who said it (GET .../messages, paginated), and for each answer, to admins,
// what the model saw (GET .../messages/{id}/context).
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { useLoad, ErrorNote, Loading, When, personName } from "../components.js";
import { ModelContext } from "./context.js";

function SessionList({ ctx }) {
  const [pages, setPages] = useState([]);
  const [next, setNext] = useState(null);
  const first = useLoad(async () => {
    const data = (await request("GET", projectPath("/sessions"), { params: { limit: 50 } })).data;
    setPages([data.sessions]);
    setNext(data.next_token);
    return true;
  }, [ctx.projectId]);
  const more = async () => {
    const data = (await request("GET", projectPath("/sessions"), { params: { limit: 50, next_token: next } })).data;
    setPages([...pages, data.sessions]);
    setNext(data.next_token);
  };
  const sessions = pages.flat();
  return html`<section class="sessions">
    <${Loading} loading=${first.loading} />
    <${ErrorNote} error=${first.error} />
    ${first.data && (sessions.length ? html`<table class="session-table">
      <caption>${t("sessions.caption")}</caption>
      <thead><tr><th scope="col">${t("sessions.session")}</th><th scope="col">${t("sessions.patient")}</th>
        <th scope="col">${t("sessions.type")}</th><th scope="col">${t("sessions.updated")}</th><th scope="col">${t("sessions.messageCount")}</th></tr></thead>
      <tbody>${sessions.map((s) => html`<tr key=${s.session_id} class="session" data-session-id=${s.session_id}>
        <td><a href=${`#/sessions/${encodeURIComponent(s.session_id)}`}>${s.name || s.session_id}</a></td>
        <td>${s.patient_id || "—"}</td>
        <td>${t(`sessions.types.${s.type}`, { defaultValue: s.type })}</td>
        <td><${When} iso=${s.updated_at} tz=${ctx.tz} /></td>
        <td>${s.message_count}</td>
      </tr>`)}</tbody>
    </table>` : html`<p class="empty">${t("sessions.empty")}</p>`)}
    ${next && html`<button type="button" class="secondary" id="more-sessions" onClick=${more}>${t("common.more")}</button>`}
  </section>`;
}

/** Who said a message: a member by name and the study role they had then; else the assistant,
 *  or a transcript's patient or doctor. */
function speaker(ctx, message) {
  if (message.speaker !== "member") return t(`sessions.roles.${message.speaker}`);
  const member = ctx.members.find((m) => m.user_id === message.user_id);
  if (!member) return personName(message.user_id, ctx.members);
  const role = message.study_role || member.study_role;
  return t("who.member", { name: member.display_name, role: t(`studyRoles.${role}`, { defaultValue: role }) });
}

function Message({ ctx, sessionId, message }) {
  const [open, setOpen] = useState(false);
  const answer = message.has_context;
  return html`<li class=${`message role-${message.role}`} data-message-id=${message.message_id}>
    <p class="meta"><strong class="speaker">${speaker(ctx, message)}</strong> · <${When} iso=${message.at} tz=${ctx.tz} />
      ${message.status && message.status !== "ok" && html` · <span class="badge">${t(`sessions.status.${message.status}`, { defaultValue: message.status })}</span>`}</p>
    <p class="text">${message.content}</p>
    ${answer && ctx.isAdmin && html`<button type="button" class="secondary show-context" aria-expanded=${open}
      onClick=${() => setOpen(!open)}>${t("sessions.whatModelSaw")}</button>`}
    ${open && html`<${ModelContext} ctx=${ctx} sessionId=${sessionId} messageId=${message.message_id} />`}
  </li>`;
}

/** The session and its messages, oldest first (every page of the listing, at most 20 of 100). */
async function loadSession(sessionId) {
  const session = (await request("GET", projectPath(seg`/sessions/${sessionId}`))).data;
  const messages = [];
  let cursor = null;
  for (let page = 0; page < 20; page += 1) {
    const data = (await request("GET", projectPath(seg`/sessions/${sessionId}/messages`), { params: { limit: 100, cursor } })).data;
    messages.push(...data.messages);
    cursor = data.next_cursor;
    if (!cursor) break;
  }
  return { session, messages, complete: !cursor };
}

function Facts({ session }) {
  const symptoms = session.facts?.symptoms || [];
  if (!symptoms.length && !session.summary) return null;
  return html`<section class="facts" aria-labelledby="facts-title">
    <h2 id="facts-title">${t("sessions.facts")}</h2>
    ${symptoms.length > 0 && html`<ul class="symptoms">${symptoms.map((s) => html`<li key=${s.name} data-status=${s.status}>
      ${s.name}: ${t(`patients.status.${s.resolved ? "resolved" : s.status}`)}${s.trend ? ` · ${t(`patients.trends.${s.trend}`, { defaultValue: s.trend })}` : ""}
    </li>`)}</ul>`}
    ${session.summary && html`<p class="summary">${session.summary}</p>`}
  </section>`;
}

function Session({ ctx, sessionId }) {
  const data = useLoad(() => loadSession(sessionId), [sessionId]);
  const s = data.data?.session;
  return html`<section class="session-detail" data-session-id=${sessionId}>
    <p><a href="#/sessions">${t("sessions.back")}</a></p>
    <${Loading} loading=${data.loading} />
    <${ErrorNote} error=${data.error} />
    ${s && html`
      <h2>${s.name || s.session_id}</h2>
      <p class="meta">${t(`sessions.types.${s.type}`, { defaultValue: s.type })}
        ${s.patient_id && html` · <a href=${`#/patients/${encodeURIComponent(s.patient_id)}`}>${t("patients.patient", { id: s.patient_id })}</a>`}
        ${" · "}${t("sessions.created")} <${When} iso=${s.created_at} tz=${ctx.tz} /> · ${t("sessions.messageTotal", { count: s.message_count })}</p>
      <${Facts} session=${s} />
      <h2>${t("sessions.messages")}</h2>
      ${!data.data.complete && html`<p class="hint" id="window-note">${t("sessions.windowOnly", { shown: data.data.messages.length, total: s.message_count })}</p>`}
      <ol class="message-list">${data.data.messages.map((m) => html`<${Message} key=${m.message_id} ctx=${ctx} sessionId=${sessionId} message=${m} />`)}</ol>`}
  </section>`;
}

export function SessionsView({ ctx }) {
  return ctx.arg ? html`<${Session} key=${ctx.arg} ctx=${ctx} sessionId=${ctx.arg} />` : html`<${SessionList} ctx=${ctx} />`;
}
