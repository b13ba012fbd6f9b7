// Small shared pieces of the views: loading data, errors and status messages, people, times.
import { html, useState, useEffect, useCallback, useRef } from "./lib.js";
import { t, i18next, currentLanguage } from "./i18n.js";
import { zoned } from "./format.js";

/** Run loader() now and whenever deps change: {data, error, loading, reload, setData}. */
export function useLoad(loader, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    try {
      const data = await loader();
      if (mine === generation.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === generation.current) setState({ data: null, error, loading: false });
    }
  }, deps);
  useEffect(() => { reload(); }, [reload]);
  const setData = (update) => setState((s) => ({ ...s, data: typeof update === "function" ? update(s.data) : update }));
  return { ...state, reload, setData };
}

/** The message of an API error in the current language (errors.<code>, else by status). */
export function errorMessage(error) {
  if (!error) return "";
  const code = error.code || "unknown";
  const fallback = t("errors.unknown", { status: error.status ?? "?" });
  return t(`errors.${code}`, { defaultValue: fallback, ...error.body });
}

/** An error: the translated message, and the server's reason (English) as detail. */
export function ErrorNote({ error, id }) {
  if (!error) return null;
  return html`<div class="note error" role="alert" id=${id}>
    <p class="message">${errorMessage(error)}</p>
    ${error.reason && html`<p class="detail">${t("errors.detail")} <span lang="en">${error.reason}</span></p>`}
  </div>`;
}

/** A polite live region for what an action did ({kind: info|warn|error, text}). */
export function Status({ status }) {
  return html`<p class=${`status ${status?.kind || ""}`} role="status" aria-live="polite">${status?.text || ""}</p>`;
}

export function Loading({ loading }) {
  return loading ? html`<p class="loading" role="status">${t("common.loading")}</p>` : null;
}

const SYSTEM_ACTORS = ["distiller", "archiver", "seed", "pruner"];

/** A user id as its member's display name and study role; job actors named as such. */
export function personName(userId, members) {
  if (!userId) return t("who.unknown");
  if (SYSTEM_ACTORS.includes(userId)) return t(`who.${userId}`);
  const member = (members || []).find((m) => m.user_id === userId);
  if (!member) return userId;
  return t("who.member", { name: member.display_name, role: t(`studyRoles.${member.study_role}`) });
}

export function Person({ userId, members }) {
  return html`<span class="person" data-user-id=${userId || ""}>${personName(userId, members)}</span>`;
}

/** An instant in the project's zone, zone named, as a <time>. */
export function When({ iso, tz }) {
  if (!iso) return null;
  return html`<time datetime=${iso}>${zoned(iso, tz)}</time>`;
}

/** An action that asks first: the button, then the question with confirm / cancel buttons. */
export function ConfirmButton({ label, question, confirmLabel, onConfirm, className = "", disabled = false, children }) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef(null);
  useEffect(() => { if (asking) confirmRef.current?.focus(); }, [asking]);
  if (!asking) {
    return html`<button type="button" class=${className} disabled=${disabled} onClick=${() => setAsking(true)}>${label}</button>`;
  }
  const confirm = async () => { setAsking(false); await onConfirm(); };
  return html`<div class="confirm" role="group" aria-label=${question}>
    <p>${question}</p>
    ${children}
    <button type="button" ref=${confirmRef} class=${`danger confirm-${className}`} onClick=${confirm}>${confirmLabel}</button>
    <button type="button" class="secondary" onClick=${() => setAsking(false)}>${t("common.cancel")}</button>
  </div>`;
}

/** A text input with its label. */
export function Field({ id, label, value, onInput, type = "text", ...rest }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <input id=${id} name=${rest.name || id} type=${type} value=${value} onInput=${(e) => onInput(e.target.value)} ...${rest} />
  </div>`;
}

/** The language switch (remembered by i18next's detector in localStorage). */
export function LanguageSwitch() {
  const lang = currentLanguage();
  return html`<div class="language">
    <label for="language">${t("app.language")}</label>
    <select id="language" name="language" value=${lang} onChange=${(e) => i18next.changeLanguage(e.target.value)}>
      <option value="zh" lang="zh-CN">中文</option>
      <option value="en" lang="en">English</option>
    </select>
  </div>`;
}

