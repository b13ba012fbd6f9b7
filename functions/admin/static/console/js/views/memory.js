// memory (admins): the hot-memory document with its token gauge, each line with who said it and
// when (project time zone), its evidence, the kill switch (delete a line, If-Match), the editor
// and the revisions (diff, restore).
import { html, useState } from "../lib.js";
import { t, currentLanguage } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { number } from "../format.js";
import { useLoad, ErrorNote, Status, Loading, Person, When, ConfirmButton, personName } from "../components.js";
import { Revisions } from "./revisions.js";

export const SECTIONS = ["System Rules", "User Preferences", "Active Context", "Lessons Learned"];

export function loadMemory() {
  return request("GET", projectPath("/memory")).then((r) => r.data);
}

/** Whom a line applies to: everyone, a study role ([CRC]) or one member (tagged with their id). */
export function scopeOf(line, members) {
  if (!line.role_tag) return t("memory.scopeEveryone");
  if ((members || []).some((m) => m.user_id === line.role_tag)) {
    return t("memory.scopeMember", { who: personName(line.role_tag, members) });
  }
  return t("memory.scopeRole", { role: t(`studyRoles.${line.role_tag}`, { defaultValue: line.role_tag }) });
}

function Gauge({ tokens, cap }) {
  const lang = currentLanguage();
  return html`<div class="gauge">
    <span id="gauge-label">${t("memory.gauge")}</span>
    <meter id="token-gauge" aria-labelledby="gauge-label gauge-text" min="0" max=${cap} low=${Math.round(cap * 0.8)}
      high=${Math.round(cap * 0.95)} optimum="0" value=${tokens}></meter>
    <span id="gauge-text" data-tokens=${tokens} data-cap=${cap}>${t("memory.gaugeText", { used: number(tokens, lang), cap: number(cap, lang) })}</span>
  </div>`;
}

/** The cited messages' text (admins): who said it, when, what; one no longer kept says so. */
function Evidence({ ctx, ids, path }) {
  const [open, setOpen] = useState(false);
  const [messages, setMessages] = useState(null);
  const [error, setError] = useState(null);
  if (!ids?.length) return null;
  const toggle = async () => {
    setOpen(!open);
    if (open || messages) return;
    try {
      setMessages((await request("GET", projectPath(path))).data.messages);
    } catch (err) {
      setError(err);
    }
  };
  return html`<div class="evidence">
    <button type="button" class="link show-evidence" aria-expanded=${open} onClick=${toggle}>
      ${t("memory.evidence", { count: ids.length })}</button>
    ${open && html`<div class="evidence-body">
      <${Loading} loading=${!messages && !error} />
      ${messages && html`<ul class="messages">${messages.map((m) => html`<li key=${m.message_id} class="message"
          data-message-id=${m.message_id} data-kept=${String(m.kept)}>
        ${m.kept ? html`<p class="meta"><${Person} userId=${m.user_id} members=${ctx.members} /> · <${When} iso=${m.at} tz=${ctx.tz} />
            ${m.session_id && html` · <a href=${`#/sessions/${encodeURIComponent(m.session_id)}`}>${t("memory.inSession", { id: m.session_id })}</a>`}</p>
          <p class="text">${m.content}</p>`
          : html`<p class="hint">${t("memory.notKept", { id: m.message_id })}</p>`}</li>`)}</ul>`}
      <${ErrorNote} error=${error} />
    </div>`}
  </div>`;
}

function Line({ ctx, line, onDelete }) {
  const [reason, setReason] = useState("");
  const said = line.source === "distilled" ? line.stated_by || line.created_by : line.created_by;
  const inputId = `reason-${line.line_id}`;
  return html`<li class="line" data-line-id=${line.line_id} data-source=${line.source}>
    <p class="text">${line.text}</p>
    <p class="meta">
      <span class=${`badge source-${line.source}`}>${t(`memory.source.${line.source}`)}</span>
      <span class="scope">${scopeOf(line, ctx.members)}</span>
      <span class="said-by">${t("memory.saidBy")} <${Person} userId=${said} members=${ctx.members} /></span>
      <span class="when"><${When} iso=${line.stated_at || line.created_at} tz=${ctx.tz} /></span>
    </p>
    <${Evidence} ctx=${ctx} ids=${line.evidence} path=${seg`/memory/lines/${line.line_id}/evidence`} />
    <${ConfirmButton} className="delete" label=${t("memory.delete")} question=${t("memory.deleteQuestion")}
      confirmLabel=${t("memory.deleteConfirm")} onConfirm=${() => onDelete(line, reason)}>
      <label for=${inputId}>${t("common.reason")}</label>
      <input id=${inputId} value=${reason} onInput=${(e) => setReason(e.target.value)} />
    <//>
  </li>`;
}

function Editor({ memory, onSave, error }) {
  const [text, setText] = useState(memory.markdown);
  const [reason, setReason] = useState("");
  const save = (e) => { e.preventDefault(); onSave(text, reason); };
  return html`<form class="editor" onSubmit=${save}>
    <h2>${t("memory.editTitle")}</h2>
    <label for="markdown">${t("memory.markdown")}</label>
    <textarea id="markdown" name="markdown" rows="14" value=${text} onInput=${(e) => setText(e.target.value)}></textarea>
    <label for="edit-reason">${t("common.reason")}</label>
    <input id="edit-reason" name="reason" value=${reason} onInput=${(e) => setReason(e.target.value)} />
    <button type="submit" id="save">${t("memory.save")}</button>
    <${ErrorNote} error=${error} id="editor-error" />
  </form>`;
}

export function MemoryView({ ctx }) {
  const memory = useLoad(loadMemory, [ctx.projectId]);
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  const [editorError, setEditorError] = useState(null);
  const [revisionsTick, setRevisionsTick] = useState(0);
  const applied = (data, message) => {
    memory.setData(data.memory);
    setError(null);
    setEditorError(null);
    setStatus({ kind: "info", text: message });
    setRevisionsTick((n) => n + 1);
  };
  const act = async (call, message, showError = setError) => {
    try {
      applied((await call()).data, message(memory.data));
    } catch (err) {
      showError(err);
      setStatus(null);
    }
  };
  const onDelete = (line, reason) => act(
    () => request("DELETE", projectPath(seg`/memory/lines/${line.line_id}`), { ifMatch: memory.data.version, params: { reason } }),
    () => t("memory.deleted", { id: line.line_id }),
  );
  const onSave = (markdown, reason) => act(
    () => request("PUT", projectPath("/memory"), { ifMatch: memory.data.version, body: { markdown, reason: reason || null } }),
    () => t("memory.saved"),
    setEditorError,
  );
  const onRestore = (version) => act(
    () => request("POST", projectPath(seg`/memory/revisions/${version}/restore`), { ifMatch: memory.data.version, body: {} }),
    () => t("memory.restored", { version }),
  );
  const data = memory.data;
  return html`<section class="memory" aria-labelledby="memory-doc">
    <${Loading} loading=${memory.loading && !data} />
    <${ErrorNote} error=${memory.error} />
    ${data && html`
      <div class="doc-head">
        <h2 id="memory-doc">${t("memory.document")} <span id="version" data-version=${data.version}>${t("memory.version", { version: data.version })}</span></h2>
        <${Gauge} tokens=${data.tokens} cap=${data.cap} />
        <p class="meta">${t("memory.updated")} <${When} iso=${data.updated_at} tz=${ctx.tz} /> · <${Person} userId=${data.updated_by} members=${ctx.members} /></p>
        <button type="button" class="secondary" id="reload" onClick=${() => { setError(null); setEditorError(null); memory.reload(); }}>${t("common.reload")}</button>
      </div>
      <${ErrorNote} error=${error} id="memory-error" />
      <${Status} status=${status} />
      ${SECTIONS.map((section) => html`<section class="doc-section" key=${section} data-section=${section}>
        <h3>${t(`memory.sections.${section}`)}</h3>
        <ul class="lines">${data.lines.filter((l) => l.section === section).map((line) =>
          html`<${Line} key=${line.line_id} ctx=${ctx} line=${line} onDelete=${onDelete} />`)}</ul>
      </section>`)}
      <${Editor} key=${data.version} memory=${data} onSave=${onSave} error=${editorError} />
      <${Revisions} ctx=${ctx} current=${data.version} tick=${revisionsTick} onRestore=${onRestore} />`}
  </section>`;
}

export { Evidence };
