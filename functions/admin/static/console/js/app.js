// The console's shell: sign-in, the header, the navigation (only the views the caller's project
// role may use) and the current view, chosen by the location hash (#/memory, #/patients/pt-1).
import { html, useState, useEffect, useRef, useCallback } from "./lib.js";
import { t, i18next } from "./i18n.js";
import { configureApi, request, projectPath, ApiError } from "./api.js";
import { savedSignIn, saveSignIn, forgetToken, tokenClaims, finishHostedUi, hostedUi } from "./auth.js";
import { LanguageSwitch } from "./components.js";
import { SignIn } from "./signin.js";
import { VIEWS, viewsFor } from "./views/index.js";

/** {view, arg} of the location hash "#/<view>/<arg>". */
function parseHash() {
  const [view = "", ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  return { view: decodeURIComponent(view), arg: rest.length ? decodeURIComponent(rest.join("/")) : "" };
}

function useHash() {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const onChange = () => setRoute(parseHash());
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

/** Who the caller is in the project: the project, the members, the caller's own membership. */
export async function openProject(token, projectId) {
  configureApi({ token, projectId });
  const claims = tokenClaims(token);
  const [project, members] = await Promise.all([
    request("GET", projectPath()).then((r) => r.data),
    request("GET", projectPath("/members")).then((r) => r.data.items),
  ]).catch((err) => {
    // At sign-in a 403 means "not a member of this project" (or no such project): said so.
    throw err.status === 403 ? new ApiError(403, { ...err.body, error: "not_a_member" }) : err;
  });
  const me = members.find((m) => m.user_id === claims?.sub);
  if (!me) throw new ApiError(403, { error: "not_a_member", reason: "" });
  return { token, projectId, project, members, me, isAdmin: me.project_role === "admin" };
}

function useLanguageTick() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const bump = () => setTick((n) => n + 1);
    i18next.on("languageChanged", bump);
    return () => i18next.off("languageChanged", bump);
  }, []);
}

export function App({ config }) {
  useLanguageTick();
  const [session, setSession] = useState(null);
  const [boot, setBoot] = useState({ busy: true, error: null });
  const signOut = useCallback((error = null) => {
    forgetToken();
    setSession(null);
    setBoot({ busy: false, error });
  }, []);
  const open = useCallback(async (token, projectId) => {
    setBoot({ busy: true, error: null });
    try {
      const opened = await openProject(token, projectId);
      saveSignIn(token, projectId);
      configureApi({ token, projectId, onUnauthorized: () => signOut(new ApiError(401, { error: "session_expired" })) });
      setSession(opened);
      setBoot({ busy: false, error: null });
    } catch (error) {
      forgetToken();
      setBoot({ busy: false, error });
    }
  }, [signOut]);
  useEffect(() => {
    (async () => {
      try {
        const returned = await finishHostedUi(hostedUi(config));
        const saved = returned || savedSignIn();
        if (saved.token && saved.projectId) return open(saved.token, saved.projectId);
      } catch (error) {
        return setBoot({ busy: false, error: new ApiError(401, { error: "hosted_ui_failed", reason: String(error.message || error) }) });
      }
      setBoot({ busy: false, error: null });
    })();
  }, []);
  if (session) return html`<${Shell} session=${session} config=${config} onSignOut=${() => signOut()} />`;
  return html`<${SignIn} config=${config} busy=${boot.busy} error=${boot.error} onSignIn=${open} />`;
}

function Nav({ views, current }) {
  return html`<nav class="views" aria-label=${t("app.views")}>
    <ul>${views.map((v) => html`<li key=${v.name}>
      <a href=${`#/${v.name}`} data-view=${v.name} aria-current=${v.name === current ? "page" : undefined}>${t(`nav.${v.name}`)}</a>
    </li>`)}</ul>
  </nav>`;
}

function Shell({ session, config, onSignOut }) {
  const route = useHash();
  const views = viewsFor(session.isAdmin);
  const fallback = session.isAdmin ? "memory" : "history";
  const name = route.view || fallback;
  const view = views.find((v) => v.name === name);
  const heading = useRef(null);
  useEffect(() => { if (route.view) heading.current?.focus(); }, [name]);
  const ctx = { ...session, config, tz: session.project.time_zone, arg: route.arg };
  const known = VIEWS.some((v) => v.name === name);
  const skip = (e) => { e.preventDefault(); heading.current?.focus(); };
  const me = session.me;
  return html`
    <a class="skip-link" href="#main" onClick=${skip}>${t("app.skip")}</a>
    <header class="top">
      <div class="brand">
        <p class="product">${t("app.title")}</p>
        <p class="project" data-project-id=${session.projectId}>${session.project.name} · <span class="tz">${session.project.time_zone}</span></p>
      </div>
      <div class="who">
        <span class="me">${t("who.member", { name: me.display_name, role: t(`studyRoles.${me.study_role}`) })}</span>
        <span class="badge">${t(`projectRoles.${me.project_role}`)}</span>
      </div>
      <${LanguageSwitch} />
      <button type="button" class="secondary" id="signout" onClick=${onSignOut}>${t("app.signOut")}</button>
    </header>
    <${Nav} views=${views} current=${name} />
    <main id="main" data-view=${name}>
      <h1 tabindex="-1" ref=${heading}>${t(view || !known ? `nav.${name}` : "app.notAllowedTitle", { defaultValue: t("app.notFoundTitle") })}</h1>
      ${view ? html`<${view.component} key=${name} ctx=${ctx} />`
        : html`<p class="note error" role="alert">${known ? t("app.notAllowed") : t("app.notFound")}</p>`}
    </main>`;
}
