// history: the history book. Weekly reports by ISO week (a week range, newest first), a report's
// correction with a reason (admins; PUT .../reports/{iso_week}, If-Match = its revision), its
// revisions (GET .../reports/{iso_week}/revisions: each text, who, when, why), and the yearly summaries.
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { isoWeekRange } from "../format.js";
import { useLoad, ErrorNote, Status, Loading, Person, When } from "../components.js";

/** "2026 年第 9 周 · 2026-W09" / "Week 9 of 2026 · 2026-W09". */
function weekName(isoWeek) {
  const [year, week] = isoWeek.split("-W");
  return t("history.week", { year, week: Number(week), iso: isoWeek });
}

/** Every revision of a week's report, newest first, each with the revision it replaced (`from`). */
async function reportRevisions(week) {
  const items = (await request("GET", projectPath(seg`/reports/${week}/revisions`))).data.items;
  return items.map((r, i) => ({ ...r, from: items[i + 1]?.revision }));
}

function ReportRevisions({ ctx, week, tick }) {
  const list = useLoad(() => reportRevisions(week), [week, tick]);
  return html`<div class="report-revisions">
    <h3>${t("history.revisionsOf", { week })}</h3>
    <${ErrorNote} error=${list.error} />
    ${list.data && (list.data.length ? html`<ol class="revisions">${list.data.map((r) => html`<li class="report-revision" key=${r.revision} data-revision=${r.revision}>
        ${r.from ? t("history.revisionChange", { from: r.from, to: r.revision }) : t("history.revisionN", { revision: r.revision })}
        ${" · "}<${When} iso=${r.created_at} tz=${ctx.tz} /> · <${Person} userId=${r.created_by} members=${ctx.members} />
        ${r.reason && html` · ${t("common.reasonIs")} <span class="reason">${r.reason}</span>`}
        ${r.summary && html`<pre class="summary">${r.summary}</pre>`}
      </li>`)}</ol>` : html`<p class="empty">${t("history.noCorrections")}</p>`)}
  </div>`;
}

function CorrectForm({ report, onDone, onCancel }) {
  const [text, setText] = useState(report.summary);
  const [reason, setReason] = useState("");
  const [error, setError] = useState(null);
  const id = report.iso_week;
  const submit = async (e) => {
    e.preventDefault();
    try {
      const response = await request("PUT", projectPath(seg`/reports/${id}`), { ifMatch: report.revision, body: { summary: text, reason } });
      onDone(response.data);
    } catch (err) {
      setError(err);
    }
  };
  return html`<form class="correct-form" onSubmit=${submit}>
    <label for=${`summary-${id}`}>${t("history.correctedText")}</label>
    <textarea id=${`summary-${id}`} name="summary" rows="6" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
    <label for=${`correct-reason-${id}`}>${t("history.correctionReason")}</label>
    <input id=${`correct-reason-${id}`} name="reason" required value=${reason} onInput=${(e) => setReason(e.target.value)} />
    <button type="submit" class="save-correction">${t("history.saveCorrection")}</button>
    <button type="button" class="secondary" onClick=${onCancel}>${t("common.cancel")}</button>
    <${ErrorNote} error=${error} />
  </form>`;
}

function Report({ ctx, report, onCorrected }) {
  const [editing, setEditing] = useState(false);
  const [showRevisions, setShowRevisions] = useState(false);
  const [tick, setTick] = useState(0);
  const range = isoWeekRange(report.iso_week);
  const done = (view) => { setEditing(false); setTick(tick + 1); onCorrected(view); };
  return html`<article class="report" data-week=${report.iso_week} data-revision=${report.revision} aria-labelledby=${`week-${report.iso_week}`}>
    <h2 id=${`week-${report.iso_week}`}>${weekName(report.iso_week)}
      ${range && html` <span class="range">${t("history.range", range)}</span>`}</h2>
    <p class="meta">${t("history.revision", { revision: report.revision })} · <${Person} userId=${report.created_by} members=${ctx.members} />
      ${" · "}<${When} iso=${report.created_at} tz=${ctx.tz} /></p>
    ${editing ? html`<${CorrectForm} report=${report} onDone=${done} onCancel=${() => setEditing(false)} />`
      : html`<pre class="summary">${report.summary}</pre>`}
    <div class="actions">
      ${ctx.isAdmin && !editing && html`<button type="button" class="correct" onClick=${() => setEditing(true)}>${t("history.correct")}</button>`}
      ${html`<button type="button" class="secondary show-revisions" aria-expanded=${showRevisions}
        onClick=${() => setShowRevisions(!showRevisions)}>${t("history.revisions")}</button>`}
    </div>
    ${showRevisions && html`<${ReportRevisions} ctx=${ctx} week=${report.iso_week} tick=${tick} />`}
  </article>`;
}

function Yearly({ ctx }) {
  const list = useLoad(() => request("GET", projectPath("/yearly-summaries")).then((r) => r.data.items), []);
  return html`<section class="yearly" aria-labelledby="yearly-title">
    <h2 id="yearly-title">${t("history.yearly")}</h2>
    <${ErrorNote} error=${list.error} />
    ${list.data && (list.data.length ? list.data.map((y) => html`<article class="year" key=${y.year} data-year=${y.year}>
        <h3>${y.year}</h3><pre class="summary">${y.summary}</pre></article>`)
      : html`<p class="empty">${t("history.noYearly")}</p>`)}
  </section>`;
}

export function HistoryView({ ctx }) {
  const [range, setRange] = useState({ from: "", to: "" });
  const [draft, setDraft] = useState(range);
  const [status, setStatus] = useState(null);
  const reports = useLoad(() => request("GET", projectPath("/reports"), { params: { from: range.from, to: range.to, limit: 20 } })
    .then((r) => r.data.reports), [range.from, range.to]);
  const apply = (e) => { e.preventDefault(); setRange(draft); };
  const onCorrected = (view) => {
    reports.setData((list) => list.map((r) => (r.iso_week === view.iso_week ? { ...r, ...view } : r)));
    setStatus({ kind: "info", text: t("history.corrected", { week: view.iso_week, revision: view.revision }) });
  };
  return html`<section class="history">
    <form class="toolbar" onSubmit=${apply}>
      <label for="history-from">${t("history.from")}</label>
      <input id="history-from" name="from" pattern="\\d{4}-W\\d{2}" placeholder=${t("history.weekPlaceholder")} aria-describedby="week-hint" value=${draft.from} onInput=${(e) => setDraft({ ...draft, from: e.target.value })} />
      <label for="history-to">${t("history.to")}</label>
      <input id="history-to" name="to" pattern="\\d{4}-W\\d{2}" placeholder=${t("history.weekPlaceholder")} aria-describedby="week-hint" value=${draft.to} onInput=${(e) => setDraft({ ...draft, to: e.target.value })} />
      <button type="submit" id="history-apply">${t("history.show")}</button>
      <p class="hint" id="week-hint">${t("history.weekHint")}</p>
    </form>
    <${Status} status=${status} />
    <${Loading} loading=${reports.loading && !reports.data} />
    <${ErrorNote} error=${reports.error} />
    ${reports.data && (reports.data.length ? reports.data.map((report) => html`<${Report} key=${report.iso_week} ctx=${ctx}
        report=${report} onCorrected=${onCorrected} />`) : html`<p class="empty">${t("history.empty")}</p>`)}
    <${Yearly} ctx=${ctx} />
  </section>`;
}
