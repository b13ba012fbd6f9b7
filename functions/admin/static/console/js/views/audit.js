// audit (admins): admin changes, newest first (GET .../memory/audit, cursor pages): who, when,
// what (the action named in the UI language), on what, why, and the details the server recorded.
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath } from "../api.js";
import { useLoad, ErrorNote, Loading, Person, When } from "../components.js";

function Details({ details }) {
  const entries = Object.entries(details || {});
  if (!entries.length) return null;
  return html`<dl class="details">${entries.map(([key, value]) => html`<div key=${key}>
    <dt>${t(`audit.details.${key}`, { defaultValue: key })}</dt>
    <dd>${Array.isArray(value) ? value.join(", ") || "—" : typeof value === "object" ? JSON.stringify(value) : String(value)}</dd>
  </div>`)}</dl>`;
}

export function AuditView({ ctx }) {
  const [items, setItems] = useState([]);
  const [cursor, setCursor] = useState(null);
  const page = async (from) => {
    const data = (await request("GET", projectPath("/memory/audit"), { params: { limit: 50, cursor: from } })).data;
    setItems((old) => (from ? [...old, ...data.items] : data.items));
    setCursor(data.next_cursor);
    return true;
  };
  const first = useLoad(() => page(null), [ctx.projectId]);
  return html`<section class="audit">
    <${Loading} loading=${first.loading} />
    <${ErrorNote} error=${first.error} />
    ${first.data && (items.length ? html`<ol class="audit-list">${items.map((a) => html`<li key=${a.audit_id} class="audit-record"
        data-action=${a.action} data-target=${a.target}>
        <p class="meta"><strong class="action">${t(`audit.actions.${a.action}`, { defaultValue: a.action })}</strong>
          ${" · "}<code class="target">${a.target}</code> · <${Person} userId=${a.actor} members=${ctx.members} /> · <${When} iso=${a.at} tz=${ctx.tz} /></p>
        ${a.reason && html`<p class="reason">${t("common.reasonIs")} <span class="text">${a.reason}</span></p>`}
        <${Details} details=${a.details} />
      </li>`)}</ol>` : html`<p class="empty">${t("audit.empty")}</p>`)}
    ${cursor && html`<button type="button" class="secondary" id="more-audit" onClick=${() => page(cursor)}>${t("common.more")}</button>`}
  </section>`;
}
