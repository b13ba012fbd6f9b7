// patients: the project's patients (GET .../patients), and for one patient their visits, the
// symptom trend over the visits' diagnoses (GET .../trend), the visit comparison (GET .../compare) and, for admins,
// erasure (DELETE .../patients/{id}) after the admin types the patient id.
import { html, useState, useMemo } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { useLoad, ErrorNote, Loading, When } from "../components.js";
import { TrendChart, trendOf } from "./trend.js";
import { Compare } from "./compare.js";
import { Erase } from "./erase.js";

/** Every page of a sessions listing (next_token), at most `pages` pages of 100. */
export async function allSessions(path, pages = 10) {
  const sessions = [];
  let next = null;
  for (let page = 0; page < pages; page += 1) {
    const data = (await request("GET", projectPath(path), { params: { limit: 100, next_token: next } })).data;
    sessions.push(...data.sessions);
    next = data.next_token;
    if (!next) break;
  }
  return sessions;
}

function PatientList({ ctx }) {
  const list = useLoad(() => request("GET", projectPath("/patients")).then((r) => r.data), [ctx.projectId]);
  const [typed, setTyped] = useState("");
  const patients = list.data?.patients || [];
  const open = (e) => { e.preventDefault(); if (typed.trim()) location.hash = `#/patients/${encodeURIComponent(typed.trim())}`; };
  return html`<section class="patients">
    <form class="toolbar" onSubmit=${open}>
      <label for="patient-id">${t("patients.open")}</label>
      <input id="patient-id" name="patient" value=${typed} onInput=${(e) => setTyped(e.target.value)} />
      <button type="submit">${t("patients.openButton")}</button>
    </form>
    <${Loading} loading=${list.loading} />
    <${ErrorNote} error=${list.error} />
    ${list.data && (patients.length ? html`<ul class="patient-list">${patients.map((p) => html`<li key=${p.patient_id} class="patient" data-patient-id=${p.patient_id}>
        <a href=${`#/patients/${encodeURIComponent(p.patient_id)}`}>${p.patient_id}</a>
        <span class="meta">${t("patients.visits", { count: p.visits })} · ${t("patients.diagnoses", { count: p.diagnoses })}
          ${" · "}${t("patients.lastVisit")} <${When} iso=${p.last_at} tz=${ctx.tz} /></span>
      </li>`)}</ul>` : html`<p class="empty">${t("patients.empty")}</p>`)}
    ${list.data && !list.data.complete && html`<p class="hint" id="patients-partial">${t("patients.partial", { count: list.data.sessions_read })}</p>`}
  </section>`;
}

/** The patient's visits (their sessions, oldest first) and symptom trend. */
async function loadPatient(patientId) {
  const visits = (await allSessions(seg`/patients/${patientId}/sessions`)).sort((a, b) => a.created_at.localeCompare(b.created_at));
  const trend = (await request("GET", projectPath(seg`/patients/${patientId}/trend`))).data;
  return { visits, trend };
}

function Visits({ ctx, visits }) {
  return html`<section aria-labelledby="visits-title">
    <h2 id="visits-title">${t("patients.visitsTitle")}</h2>
    <ol class="visit-list">${visits.map((v) => html`<li key=${v.session_id} class="visit" data-session-id=${v.session_id}>
      <a href=${`#/sessions/${encodeURIComponent(v.session_id)}`}>${v.name || v.session_id}</a>
      <span class="meta"><${When} iso=${v.created_at} tz=${ctx.tz} /> · ${t("patients.messages", { count: v.message_count })}
        ${" · "}${t("patients.diagnoses", { count: v.diagnosis_count })}</span>
    </li>`)}</ol>
  </section>`;
}

function Patient({ ctx, patientId }) {
  const [tick, setTick] = useState(0);
  const data = useLoad(() => loadPatient(patientId), [patientId, tick]);
  const trend = useMemo(() => (data.data ? trendOf(data.data.trend, ctx.tz) : null), [data.data]);
  return html`<section class="patient-detail" data-patient-id=${patientId}>
    <p><a href="#/patients">${t("patients.back")}</a></p>
    <h2 class="patient-id">${t("patients.patient", { id: patientId })}</h2>
    <${Loading} loading=${data.loading} />
    <${ErrorNote} error=${data.error} />
    ${data.data && (data.data.visits.length === 0 ? html`<p class="empty" id="no-visits">${t("patients.noVisits")}</p>` : html`
      <section aria-labelledby="trend-title">
        <h2 id="trend-title">${t("patients.trend")}</h2>
        ${trend.visits.length ? html`<${TrendChart} trend=${trend} />` : html`<p class="empty">${t("patients.noDiagnoses")}</p>`}
      </section>
      <${Compare} ctx=${ctx} patientId=${patientId} visits=${data.data.visits} diagnoses=${trend.visits.map((v) => v)} />
      <${Visits} ctx=${ctx} visits=${data.data.visits} />`)}
    ${ctx.isAdmin && html`<${Erase} ctx=${ctx} patientId=${patientId} onErased=${() => setTick(tick + 1)} />`}
  </section>`;
}

export function PatientsView({ ctx }) {
  return ctx.arg ? html`<${Patient} key=${ctx.arg} ctx=${ctx} patientId=${ctx.arg} />` : html`<${PatientList} ctx=${ctx} />`;
}
