// A patient's symptom trend over visits, as the server reads it from the diagnoses' symptom
// snapshots (GET .../patients/{id}/trend; each snapshot frozen when the diagnosis was made): per
// symptom and visit, present / resolved (present before, stated as gone) / denied / not mentioned.
// Drawn with Chart.js (vendored, loaded on first use), and the same data as a table for screen
// readers and for reading exact values.
import { html, useEffect, useRef, loadScript } from "../lib.js";
import { t } from "../i18n.js";
import { localDate } from "../format.js";

export const STATUSES = ["present", "resolved", "denied"];
// colour (AA contrast on white) and point shape per status: never colour alone.
const STYLE = {
  present: { color: "#b3261e", pointStyle: "circle" },
  resolved: { color: "#1b6e3a", pointStyle: "triangle" },
  denied: { color: "#4a5568", pointStyle: "crossRot" },
};

/** The server's trend as the chart and table draw it: {visits: [{label, diagnosis: {diagnosis_id,
 *  session_id}}], symptoms: [name], cells: {symptom: {diagnosisId: status}}}. */
export function trendOf(trend, tz) {
  const visits = trend.visits.map((v, i) => ({
    label: t("patients.visitLabel", { n: i + 1, name: v.session_name || v.session_id, date: localDate(v.at, tz) }),
    diagnosis: { diagnosis_id: v.diagnosis_id, session_id: v.session_id },
  }));
  const cells = Object.fromEntries(trend.symptoms.map((s) => [s.name,
    Object.fromEntries(s.statuses.map((status, i) => [visits[i].diagnosis.diagnosis_id, status]))]));
  return { visits, symptoms: trend.symptoms.map((s) => s.name), cells };
}

function datasets(trend) {
  return STATUSES.map((status) => ({
    label: t(`patients.status.${status}`),
    status,
    data: trend.visits.flatMap((v) => trend.symptoms
      .filter((s) => trend.cells[s][v.diagnosis.diagnosis_id] === status)
      .map((s) => ({ x: v.label, y: s }))),
    showLine: false,
    pointStyle: STYLE[status].pointStyle,
    pointRadius: 9,
    pointHoverRadius: 11,
    borderWidth: 3,
    borderColor: STYLE[status].color,
    backgroundColor: STYLE[status].color,
  }));
}

function chartConfig(trend) {
  window.Chart.defaults.font = { family: getComputedStyle(document.body).fontFamily, size: 13 };
  return {
    type: "line",
    data: { labels: trend.visits.map((v) => v.label), datasets: datasets(trend) },
    options: {
      animation: false,
      maintainAspectRatio: false,
      scales: {
        x: { type: "category", labels: trend.visits.map((v) => v.label), offset: true, ticks: { color: "#1f2933" } },
        y: { type: "category", labels: trend.symptoms, offset: true, reverse: false, ticks: { color: "#1f2933" } },
      },
      plugins: { legend: { labels: { usePointStyle: true, color: "#1f2933" } } },
    },
  };
}

export function TrendChart({ trend }) {
  const canvas = useRef(null);
  useEffect(() => {
    let chart = null;
    let cancelled = false;
    loadScript("vendor/chart.umd.min.js").then(() => {
      if (cancelled || !canvas.current) return;
      chart = new window.Chart(canvas.current, chartConfig(trend));
      // drawn: how many points (the tests and the screenshots wait for it)
      canvas.current.dataset.points = String(chart.data.datasets.reduce((n, d) => n + d.data.length, 0));
    });
    return () => { cancelled = true; chart?.destroy(); };
  }, [trend]);
  const height = Math.max(180, 60 + trend.symptoms.length * 44);
  return html`<figure class="trend" aria-labelledby="trend-caption">
    <figcaption id="trend-caption">${t("patients.trendCaption")}</figcaption>
    <div class="chart-box" style=${{ height: `${height}px` }}>
      <canvas id="trend-chart" ref=${canvas} role="img" aria-label=${t("patients.trendAlt", { visits: trend.visits.length, symptoms: trend.symptoms.length })}></canvas>
    </div>
    <table class="trend-table">
      <caption>${t("patients.trendTable")}</caption>
      <thead><tr><th scope="col">${t("patients.symptom")}</th>${trend.visits.map((v) => html`<th scope="col" key=${v.diagnosis.diagnosis_id}>${v.label}</th>`)}</tr></thead>
      <tbody>${trend.symptoms.map((s) => html`<tr key=${s} data-symptom=${s}><th scope="row">${s}</th>
        ${trend.visits.map((v) => {
          const status = trend.cells[s][v.diagnosis.diagnosis_id] || "not_mentioned";
          return html`<td key=${v.diagnosis.diagnosis_id} class=${`status-${status}`} data-status=${status}>${t(`patients.status.${status}`)}</td>`;
        })}</tr>`)}</tbody>
    </table>
  </figure>`;
}
