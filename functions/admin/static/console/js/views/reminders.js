// reminders: the caller's active reminders (an admin: everyone's or their own, ?scope=), each with
// its owner, next firing in the reminder's zone, and cancel (DELETE: its owner or an admin).
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { wallClock } from "../format.js";
import { useLoad, ErrorNote, Status, Loading, Person, When, ConfirmButton } from "../components.js";

function Row({ ctx, reminder, onCancel }) {
  return html`<tr class="reminder" data-reminder-id=${reminder.reminder_id} data-owner=${reminder.owner}>
    <td class="text">${reminder.text}</td>
    ${ctx.isAdmin && html`<td><${Person} userId=${reminder.owner} members=${ctx.members} /></td>`}
    <td>${t(reminder.recurring ? "reminders.recurring" : "reminders.once")} <code class="expression">${reminder.expression}</code></td>
    <td class="next">${wallClock(reminder.next_fire_local, reminder.time_zone || ctx.tz)}</td>
    <td><${When} iso=${reminder.created_at} tz=${ctx.tz} /></td>
    <td><${ConfirmButton} className="cancel-reminder" label=${t("reminders.cancel")}
      question=${t("reminders.cancelQuestion", { text: reminder.text })} confirmLabel=${t("reminders.cancelConfirm")}
      onConfirm=${() => onCancel(reminder)} /></td>
  </tr>`;
}

export function RemindersView({ ctx }) {
  const [scope, setScope] = useState(ctx.isAdmin ? "all" : "own");
  const list = useLoad(() => request("GET", projectPath("/reminders"), { params: { scope } }).then((r) => r.data.reminders),
    [ctx.projectId, scope]);
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  const onCancel = async (reminder) => {
    try {
      await request("DELETE", projectPath(seg`/reminders/${reminder.reminder_id}`));
      list.setData((items) => items.filter((r) => r.reminder_id !== reminder.reminder_id));
      setStatus({ kind: "info", text: t("reminders.cancelled", { text: reminder.text }) });
      setError(null);
    } catch (err) {
      setError(err);
    }
  };
  return html`<section class="reminders">
    ${ctx.isAdmin ? html`<div class="toolbar">
      <label for="reminder-scope">${t("reminders.scope")}</label>
      <select id="reminder-scope" value=${scope} onChange=${(e) => setScope(e.target.value)}>
        <option value="all">${t("reminders.scopeAll")}</option>
        <option value="own">${t("reminders.scopeOwn")}</option>
      </select></div>` : html`<p class="hint">${t("reminders.ownHint")}</p>`}
    <${Status} status=${status} />
    <${ErrorNote} error=${list.error || error} />
    <${Loading} loading=${list.loading && !list.data} />
    ${list.data && (list.data.length ? html`<table class="reminder-table">
      <caption>${t("reminders.caption", { count: list.data.length })}</caption>
      <thead><tr>
        <th scope="col">${t("reminders.text")}</th>
        ${ctx.isAdmin && html`<th scope="col">${t("reminders.owner")}</th>`}
        <th scope="col">${t("reminders.schedule")}</th>
        <th scope="col">${t("reminders.next")}</th>
        <th scope="col">${t("reminders.created")}</th>
        <th scope="col"><span class="visually-hidden">${t("common.actions")}</span></th>
      </tr></thead>
      <tbody>${list.data.map((r) => html`<${Row} key=${r.reminder_id} ctx=${ctx} reminder=${r} onCancel=${onCancel} />`)}</tbody>
    </table>` : html`<p class="empty">${t("reminders.empty")}</p>`)}
  </section>`;
}
