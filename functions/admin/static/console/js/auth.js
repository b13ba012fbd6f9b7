// Sign-in: a bearer token pasted into the token field (kept in this tab's sessionStorage only), or
// the deployment's Cognito Hosted UI (authorization code + PKCE through oidc-client-ts; shown only
// when config.json names a hosted-UI domain and an app client id), whose ID token is the bearer
// token the API's JWT authorizer verifies. The token proves identity only: the project's
// membership (GET /v1/projects/{p}/members) decides what the console shows.
import { loadScript } from "./lib.js";

const TOKEN_KEY = "console.token";
const PROJECT_KEY = "console.project";

export function savedSignIn() {
  return { token: sessionStorage.getItem(TOKEN_KEY) || "", projectId: localStorage.getItem(PROJECT_KEY) || "" };
}

export function saveSignIn(token, projectId) {
  sessionStorage.setItem(TOKEN_KEY, token);
  localStorage.setItem(PROJECT_KEY, projectId);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** The JWT's claims (not verified here: the API verifies every call); null when not a JWT. */
export function tokenClaims(token) {
  const payload = String(token || "").split(".")[1];
  if (!payload) return null;
  try {
    const base64 = payload.replaceAll("-", "+").replaceAll("_", "/");
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

/** config.json's hosted UI, or null: {domain, client_id, scope?}. */
export function hostedUi(config) {
  const cognito = config?.cognito;
  return cognito?.domain && cognito?.client_id ? cognito : null;
}

async function userManager(cognito) {
  await loadScript("vendor/oidc-client-ts.min.js");
  const { UserManager, WebStorageStateStore } = window.oidc;
  const base = `https://${cognito.domain}`;
  const store = new WebStorageStateStore({ store: window.sessionStorage });
  return new UserManager({
    authority: base,
    // Cognito's hosted-UI endpoints, given so no discovery document is fetched.
    metadata: {
      issuer: base,
      authorization_endpoint: `${base}/oauth2/authorize`,
      token_endpoint: `${base}/oauth2/token`,
      end_session_endpoint: `${base}/logout`,
    },
    client_id: cognito.client_id,
    redirect_uri: `${location.origin}${location.pathname}`,
    response_type: "code",
    scope: cognito.scope || "openid email profile",
    loadUserInfo: false,
    automaticSilentRenew: false,
    monitorSession: false,
    userStore: store,
    stateStore: store,
  });
}

/** Go to the hosted UI (code + PKCE); the project id travels in the OAuth state. */
export async function startHostedUi(cognito, projectId) {
  const manager = await userManager(cognito);
  await manager.signinRedirect({ state: { projectId } });
}

/** On return from the hosted UI (?code=&state=): exchange the code; {token, projectId} or null. */
export async function finishHostedUi(cognito) {
  const params = new URLSearchParams(location.search);
  if (!cognito || !params.has("code") || !params.has("state")) return null;
  const manager = await userManager(cognito);
  try {
    const user = await manager.signinRedirectCallback();
    return { token: user.id_token, projectId: user.state?.projectId || "" };
  } finally {
    history.replaceState(null, "", `${location.pathname}${location.hash}`);
  }
}
