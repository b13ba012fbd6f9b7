// review (admins): distillation candidates held for review. Each names the rules an approval would
// relax (the server's "relaxes", else the line the item's detail names in the current hot memory),
// can be reworded before approval ({"text"}: the rules are then decided on the new text), and an
// approval the API answers with 422 confirmation_required is confirmed with the rules named
// ({"confirm": true}).
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { useLoad, ErrorNote, Status, Loading, Person, When, ConfirmButton } from "../components.js";
import { loadMemory, Evidence, scopeOf } from "./memory.js";

/** The admin lines an item concerns: the System Rules the server says it relaxes, the line its
 *  detail names, or every System Rule when it asks to relax them all. */
function concernedLines(item, memory) {
  if (item.relaxes?.length) return item.relaxes;
  const lines = memory?.lines || [];
  const named = lines.filter((l) => l.line_id === item.detail);
  if (named.length) return named;
  return item.reason === "relaxes_system_rules" ? lines.filter((l) => l.section === "System Rules") : [];
}

function RuleList({ rules, className }) {
  return html`<ul class=${className}>${rules.map((r) => html`<li key=${r.line_id} class="relaxed-rule" data-line-id=${r.line_id}>
    <span class="text">${r.text}</span> <code class="id">${r.line_id}</code></li>`)}</ul>`;
}

function Confirmation({ rules, onConfirm, onCancel }) {
  return html`<div class="confirm-relax note warn" role="alertdialog" aria-labelledby="confirm-relax-title">
    <p id="confirm-relax-title">${t("review.confirmTitle", { count: rules.length })}</p>
    <${RuleList} rules=${rules} className="rules" />
    <button type="button" class="danger confirm-approve" onClick=${onConfirm}>${t("review.confirmApprove")}</button>
    <button type="button" class="secondary cancel-approve" onClick=${onCancel}>${t("common.cancel")}</button>
  </div>`;
}

function Item({ ctx, item, memory, onDecided }) {
  const [text, setText] = useState(item.text);
  const [rules, setRules] = useState(null);
  const [reason, setReason] = useState("");
  const [error, setError] = useState(null);
  const concerned = concernedLines(item, memory);
  const pending = item.status === "pending";
  const approve = async (confirm) => {
    const body = { ...(confirm ? { confirm: true } : {}), ...(reason ? { reason } : {}) };
    if (text.trim() !== item.text) body.text = text.trim();
    try {
      await request("POST", projectPath(seg`/memory/review/${item.item_id}/approve`), { body });
      setRules(null);
      onDecided(t("review.approved", { rules: confirm ? (rules || []).map((r) => r.line_id).join(", ") : "" }));
    } catch (err) {
      if (err.code === "confirmation_required") return setRules(err.body.rules || []);
      setError(err);
    }
  };
  const reject = async () => {
    try {
      await request("POST", projectPath(seg`/memory/review/${item.item_id}/reject`), { body: reason ? { reason } : {} });
      onDecided(t("review.rejected"));
    } catch (err) {
      setError(err);
    }
  };
  const textId = `review-text-${item.item_id}`;
  return html`<li class="review-item" data-item-id=${item.item_id} data-status=${item.status}>
    ${pending
      ? html`<label for=${textId}>${t("review.textEditable")}</label>
          <textarea id=${textId} class="review-text" rows="2" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>`
      : html`<p class="text">${item.text}</p>`}
    ${item.approved_text && html`<p class="approved-text">${t("review.approvedAs")} <span class="text">${item.approved_text}</span></p>`}
    <p class="meta"><span class="badge">${t(`review.status.${item.status}`)}</span>
      ${t(`memory.sections.${item.section}`)}${" · "}${scopeOf(item, ctx.members)}
      ${" · "}<${When} iso=${item.created_at} tz=${ctx.tz} /></p>
    <p class="why">${t(`review.reasons.${item.reason}`, { defaultValue: item.reason })}</p>
    ${concerned.length > 0 && html`<div class="concerned"><p>${t("review.rulesConcerned")}</p><${RuleList} rules=${concerned} className="rules" /></div>`}
    <${Evidence} ctx=${ctx} ids=${item.evidence} path=${seg`/memory/review/${item.item_id}/evidence`} />
    ${item.decided_by && html`<p class="meta">${t("review.decided")} <${Person} userId=${item.decided_by} members=${ctx.members} />
      ${" · "}<${When} iso=${item.decided_at} tz=${ctx.tz} /></p>`}
    ${pending && html`<div class="actions">
      <label for=${`reason-${item.item_id}`}>${t("common.reason")}</label>
      <input id=${`reason-${item.item_id}`} value=${reason} onInput=${(e) => setReason(e.target.value)} />
      <button type="button" class="approve" onClick=${() => approve(false)}>${t("review.approve")}</button>
      <${ConfirmButton} className="reject" label=${t("review.reject")} question=${t("review.rejectQuestion")}
        confirmLabel=${t("review.rejectConfirm")} onConfirm=${reject} />
    </div>`}
    ${rules && html`<${Confirmation} rules=${rules} onConfirm=${() => approve(true)}
      onCancel=${() => { setRules(null); onDecided(t("review.stillPending"), "info", false); }} />`}
    <${ErrorNote} error=${error} />
  </li>`;
}

export function ReviewView({ ctx }) {
  const [filter, setFilter] = useState("pending");
  const [status, setStatus] = useState(null);
  const items = useLoad(() => request("GET", projectPath("/memory/review"), { params: { status: filter === "all" ? "" : filter } })
    .then((r) => r.data.items), [filter]);
  const memory = useLoad(loadMemory, [ctx.projectId]);
  const onDecided = (text, kind = "info", reload = true) => {
    setStatus({ kind, text });
    if (reload) { items.reload(); memory.reload(); }
  };
  return html`<section class="review">
    <div class="toolbar">
      <label for="review-filter">${t("review.filter")}</label>
      <select id="review-filter" value=${filter} onChange=${(e) => setFilter(e.target.value)}>
        <option value="pending">${t("review.status.pending")}</option>
        <option value="all">${t("review.all")}</option>
      </select>
    </div>
    <${Status} status=${status} />
    <${Loading} loading=${items.loading && !items.data} />
    <${ErrorNote} error=${items.error || memory.error} />
    ${items.data && (items.data.length
      ? html`<ul class="review-list">${items.data.map((item) => html`<${Item} key=${item.item_id} ctx=${ctx} item=${item}
          memory=${memory.data} onDecided=${onDecided} />`)}</ul>`
      : html`<p class="empty">${t("review.empty")}</p>`)}
  </section>`;
}
