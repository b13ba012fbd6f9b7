// The sign-in page: the project id and a bearer token (name="token"), or the Cognito Hosted UI
// when the deployment configures one (config.json).
import { html, useState } from "./lib.js";
import { t } from "./i18n.js";
import { savedSignIn, hostedUi, startHostedUi } from "./auth.js";
import { ErrorNote, LanguageSwitch } from "./components.js";

export function SignIn({ config, busy, error, onSignIn }) {
  const saved = savedSignIn();
  const [projectId, setProjectId] = useState(saved.projectId);
  const [token, setToken] = useState("");
  const [hostedError, setHostedError] = useState(null);
  const cognito = hostedUi(config);
  const submit = (e) => {
    e.preventDefault();
    onSignIn(token.trim().replace(/^Bearer\s+/i, ""), projectId.trim());
  };
  const hosted = async () => {
    if (!projectId.trim()) return setHostedError({ code: "project_required", body: {} });
    try {
      await startHostedUi(cognito, projectId.trim());
    } catch (err) {
      setHostedError({ code: "hosted_ui_failed", reason: String(err.message || err), body: {} });
    }
  };
  return html`
    <header class="top signin-top">
      <div class="brand"><p class="product">${t("app.title")}</p></div>
      <${LanguageSwitch} />
    </header>
    <main id="main" class="signin">
      <h1>${t("signIn.title")}</h1>
      <p class="hint">${t("signIn.intro")}</p>
      <form id="signin-form" onSubmit=${submit}>
        <div class="field">
          <label for="project">${t("signIn.project")}</label>
          <input id="project" name="project" required autocomplete="off" spellcheck="false"
            value=${projectId} onInput=${(e) => setProjectId(e.target.value)} />
        </div>
        <div class="field">
          <label for="token">${t("signIn.token")}</label>
          <input id="token" name="token" type="password" required autocomplete="off" spellcheck="false"
            aria-describedby="token-hint" value=${token} onInput=${(e) => setToken(e.target.value)} />
          <p class="hint" id="token-hint">${t("signIn.tokenHint")}</p>
        </div>
        <button type="submit" id="signin" disabled=${busy}>${busy ? t("signIn.busy") : t("signIn.submit")}</button>
      </form>
      ${cognito && html`<div class="hosted">
        <p>${t("signIn.or")}</p>
        <button type="button" id="signin-hosted" class="secondary" onClick=${hosted}>${t("signIn.hosted")}</button>
      </div>`}
      <${ErrorNote} error=${error || hostedError} id="signin-error" />
    </main>`;
}
