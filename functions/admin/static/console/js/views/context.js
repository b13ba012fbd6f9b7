// What the model saw for one answer (admins): the asker, the intents and, per LLM call, the
// blocks sent (name, tokens, text), from GET .../sessions/{s}/messages/{m}/context.
import { html } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { useLoad, ErrorNote, Loading } from "../components.js";

function Block({ block }) {
  return html`<details class="block" data-block=${block.name}>
    <summary>${t(`context.blocks.${block.name}`, { defaultValue: block.name })} · ${t("memory.tokens", { count: block.tokens })}</summary>
    <pre class="block-text">${block.text}</pre>
  </details>`;
}

export function ModelContext({ sessionId, messageId }) {
  const view = useLoad(() => request("GET", projectPath(seg`/sessions/${sessionId}/messages/${messageId}/context`)).then((r) => r.data),
    [sessionId, messageId]);
  const data = view.data;
  return html`<div class="model-context" data-message-id=${messageId}>
    <${Loading} loading=${view.loading} />
    <${ErrorNote} error=${view.error} />
    ${data && html`
      <p class="meta">${t("context.asker", { name: data.asker?.display_name || data.asker?.user_id || "?",
          role: t(`studyRoles.${data.asker?.study_role || "Other"}`) })}
        ${" · "}${t("context.intents")} ${(data.intents || []).map((intent) => html`<span class="badge intent" key=${intent} data-intent=${intent}>${t(`context.intentNames.${intent}`, { defaultValue: intent })}</span> `)}</p>
      ${data.calls.map((call, i) => html`<section class="call" key=${i}>
        <h3>${t("context.call", { n: i + 1 })} · ${t(call.load_history ? "context.withHistory" : "context.withoutHistory")}</h3>
        ${call.blocks.map((block, j) => html`<${Block} key=${j} block=${block} />`)}
      </section>`)}`}
  </div>`;
}
