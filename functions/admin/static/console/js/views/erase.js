// Erasure of a patient (admins; withdrawal of consent): the admin types the patient id to enable
// the button; DELETE .../patients/{id} answers 204 (done) or 202 (a job), and the erasure record
// (GET .../patients/{id}/erasure) says who, when, status and what was erased.
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { ErrorNote, Person, When } from "../components.js";

function Record({ ctx, record }) {
  return html`<div class="erasure-record note info" role="status" data-status=${record.status}>
    <p>${t(`patients.erasure.${record.status}`, { defaultValue: record.status })} · <${Person} userId=${record.actor} members=${ctx.members} />
      ${" · "}<${When} iso=${record.finished_at || record.requested_at} tz=${ctx.tz} /></p>
    <ul class="counts">${Object.entries(record.counts || {}).map(([kind, n]) => html`<li key=${kind}>
      ${t("patients.erasure.count", { kind: t(`patients.erasure.kinds.${kind}`, { defaultValue: kind }), n })}</li>`)}</ul>
  </div>`;
}

export function Erase({ ctx, patientId, onErased }) {
  const [typed, setTyped] = useState("");
  const [record, setRecord] = useState(null);
  const [error, setError] = useState(null);
  const erase = async (e) => {
    e.preventDefault();
    if (typed !== patientId) return;
    try {
      await request("DELETE", projectPath(seg`/patients/${patientId}`));
      setRecord((await request("GET", projectPath(seg`/patients/${patientId}/erasure`))).data);
      setError(null);
      setTyped("");
      onErased();
    } catch (err) {
      setError(err);
    }
  };
  return html`<section class="erase danger-zone" aria-labelledby="erase-title">
    <h2 id="erase-title">${t("patients.eraseTitle")}</h2>
    <p>${t("patients.eraseWarning")}</p>
    <form class="toolbar" onSubmit=${erase}>
      <label for="erase-confirm">${t("patients.eraseType", { id: patientId })}</label>
      <input id="erase-confirm" name="confirm" autocomplete="off" spellcheck="false" value=${typed}
        onInput=${(e) => setTyped(e.target.value)} />
      <button type="submit" id="erase" class="danger solid" disabled=${typed !== patientId}>${t("patients.eraseButton")}</button>
    </form>
    <${ErrorNote} error=${error} />
    ${record && html`<${Record} ctx=${ctx} record=${record} />`}
  </section>`;
}
