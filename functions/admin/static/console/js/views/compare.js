// The visit comparison: from a diagnosis (its frozen snapshot) to a later diagnosis or a visit's
// current facts (GET .../patients/{id}/compare?from=<diagnosis_id>&to=<diagnosis_id | current:<session_id>>).
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { ErrorNote } from "../components.js";

const GROUPS = ["new", "resolved", "persisting", "not_mentioned"];

function trendName(trend) {
  return trend ? t(`patients.trends.${trend}`, { defaultValue: trend }) : t("patients.trends.none");
}

function Result({ result }) {
  return html`<div class="compare-result" aria-live="polite">
    ${GROUPS.map((group) => html`<div class=${`group group-${group}`} key=${group} data-group=${group}>
      <h3>${t(`patients.compareGroups.${group}`)}</h3>
      ${result[group].length ? html`<ul>${result[group].map((name) => html`<li key=${name}>${name}</li>`)}</ul>`
        : html`<p class="empty">${t("common.none")}</p>`}
    </div>`)}
    <div class="group group-changed_trend" data-group="changed_trend">
      <h3>${t("patients.compareGroups.changed_trend")}</h3>
      ${result.changed_trend.length ? html`<ul>${result.changed_trend.map((c) => html`<li key=${c.name}>
          ${t("patients.trendChange", { name: c.name, from: trendName(c.from), to: trendName(c.to) })}</li>`)}</ul>`
        : html`<p class="empty">${t("common.none")}</p>`}
    </div>
  </div>`;
}

/** diagnoses: the trend's visits ({label, diagnosis}), oldest first; visits: the patient's sessions. */
export function Compare({ patientId, visits, diagnoses }) {
  const targets = [
    ...diagnoses.map((d) => ({ value: d.diagnosis.diagnosis_id, label: d.label })),
    ...visits.map((v) => ({ value: `current:${v.session_id}`, label: t("patients.currentOf", { name: v.name || v.session_id }) })),
  ];
  const [from, setFrom] = useState(diagnoses[0]?.diagnosis.diagnosis_id || "");
  const [to, setTo] = useState(targets[targets.length - 1]?.value || "");
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  if (!diagnoses.length) return null;
  const compare = async (e) => {
    e.preventDefault();
    try {
      setResult((await request("GET", projectPath(seg`/patients/${patientId}/compare`), { params: { from, to } })).data);
      setError(null);
    } catch (err) {
      setError(err);
      setResult(null);
    }
  };
  return html`<section class="compare" aria-labelledby="compare-title">
    <h2 id="compare-title">${t("patients.compare")}</h2>
    <form class="toolbar" onSubmit=${compare}>
      <label for="compare-from">${t("patients.compareFrom")}</label>
      <select id="compare-from" value=${from} onChange=${(e) => setFrom(e.target.value)}>
        ${diagnoses.map((d) => html`<option key=${d.diagnosis.diagnosis_id} value=${d.diagnosis.diagnosis_id}>${d.label}</option>`)}
      </select>
      <label for="compare-to">${t("patients.compareTo")}</label>
      <select id="compare-to" value=${to} onChange=${(e) => setTo(e.target.value)}>
        ${targets.map((x) => html`<option key=${x.value} value=${x.value}>${x.label}</option>`)}
      </select>
      <button type="submit" id="compare-run">${t("patients.compareRun")}</button>
    </form>
    <${ErrorNote} error=${error} />
    ${result && html`<${Result} result=${result} />`}
  </section>`;
}
