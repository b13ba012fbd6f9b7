// The hot memory's stored versions, newest first: who, when, why, tokens; each one's diff against
// the version before it, and restore (a NEW version equal to it).
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { useLoad, ErrorNote, Loading, Person, When, ConfirmButton } from "../components.js";

function Diff({ version }) {
  const diff = useLoad(() => request("GET", projectPath(seg`/memory/revisions/${version}`)).then((r) => r.data.diff), [version]);
  if (diff.error) return html`<${ErrorNote} error=${diff.error} />`;
  const text = diff.data?.unified || diff.data?.text || (typeof diff.data === "string" ? diff.data : "");
  return html`<pre class="diff" aria-label=${t("memory.diffOf", { version })}>${diff.loading ? t("common.loading") : text || t("memory.noDiff")}</pre>`;
}

function Revision({ ctx, item, current, onRestore }) {
  const [showDiff, setShowDiff] = useState(false);
  return html`<li class="revision" data-version=${item.version}>
    <p><strong>${t("memory.version", { version: item.version })}</strong>
      ${item.version === current && html` <span class="badge">${t("memory.current")}</span>`}
      ${" · "}<${When} iso=${item.created_at} tz=${ctx.tz} /> · <${Person} userId=${item.created_by} members=${ctx.members} />
      ${" · "}${t("memory.tokens", { count: item.tokens })}</p>
    ${item.reason && html`<p class="reason">${t("common.reasonIs")} <span class="text">${item.reason}</span></p>`}
    <button type="button" class="secondary show-diff" aria-expanded=${showDiff} onClick=${() => setShowDiff(!showDiff)}>${t("memory.showDiff")}</button>
    ${item.version !== current && html`<${ConfirmButton} className="restore" label=${t("memory.restore")}
      question=${t("memory.restoreQuestion", { version: item.version })} confirmLabel=${t("memory.restoreConfirm")}
      onConfirm=${() => onRestore(item.version)} />`}
    ${showDiff && html`<${Diff} version=${item.version} />`}
  </li>`;
}

export function Revisions({ ctx, current, tick, onRestore }) {
  const list = useLoad(() => request("GET", projectPath("/memory/revisions"), { params: { limit: 20 } }).then((r) => r.data.items), [tick]);
  return html`<section class="revisions" aria-labelledby="revisions-title">
    <h2 id="revisions-title">${t("memory.revisions")}</h2>
    <${Loading} loading=${list.loading && !list.data} />
    <${ErrorNote} error=${list.error} />
    <ol class="revision-list">${(list.data || []).map((item) => html`<${Revision} key=${item.version} ctx=${ctx} item=${item}
      current=${current} onRestore=${onRestore} />`)}</ol>
  </section>`;
}
