// The console's calls to the service's HTTP API (same origin, bearer token). Every error body of
// the API is {"error": code, "reason", "retryable", "request_id", ...}; API Gateway's own refusals
// are {"message"}. ApiError carries the code, the reason and the whole body.

const session = { token: "", projectId: "", onUnauthorized: null };

export class ApiError extends Error {
  /** status: HTTP status; body: the parsed JSON error body (or null). */
  constructor(status, body) {
    const code = body?.error || (status === 401 ? "unauthorized" : status === 0 ? "network" : `http_${status}`);
    super(body?.reason || body?.message || code);
    this.status = status;
    this.code = code;
    this.reason = body?.reason || body?.message || "";
    this.body = body || {};
  }
}

/** Use this token and project for every call; onUnauthorized runs on a 401 (token expired). */
export function configureApi({ token, projectId, onUnauthorized }) {
  session.token = token;
  session.projectId = projectId;
  session.onUnauthorized = onUnauthorized || null;
}

export function projectId() {
  return session.projectId;
}

/** The project path: projectPath("/memory") -> /v1/projects/{id}/memory (ids encoded). */
export function projectPath(suffix = "") {
  return `/v1/projects/${segment(session.projectId)}${suffix}`;
}

/** One path segment: percent-encoded only where a segment needs it (the API refuses a path with a
 *  percent-escape, and a user id may hold "@" or ":", which a segment allows as they are). */
function segment(value) {
  return encodeURIComponent(value).replace(/%(?:40|3A|2B|2C|3B|3D|21|24|26|27|28|29|2A)/gi, decodeURIComponent);
}

/** Encode each interpolated value as a path segment: seg`/sessions/${id}`. */
export function seg(strings, ...values) {
  return strings.reduce((out, part, i) => out + part + (i < values.length ? segment(values[i]) : ""), "");
}

function query(params) {
  const entries = Object.entries(params || {}).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return entries.length ? `?${new URLSearchParams(entries)}` : "";
}

// One request at a time: a view needs 1-4 calls, and sending them together would make one user
// action start as many function instances when the functions are idle (each a cold start), for
// no gain a person could notice.
let lane = Promise.resolve();
function inLane(call) {
  const run = lane.then(call, call);
  lane = run.catch(() => undefined);
  return run;
}

/**
 * One call. Returns {status, data, etag, headers}; throws ApiError for any status >= 400 (and
 * status 0 when the network failed). ifMatch: a version number or string, sent as "<n>".
 */
export function request(method, path, options = {}) {
  return inLane(() => send(method, path, options));
}

async function send(method, path, { body, ifMatch, params, auth = true }) {
  const headers = { Accept: "application/json" };
  if (auth && session.token) headers.Authorization = `Bearer ${session.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (ifMatch !== undefined && ifMatch !== null) headers["If-Match"] = `"${ifMatch}"`;
  let response;
  try {
    response = await fetch(path + query(params), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(0, { error: "network", reason: String(err?.message || err) });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    if (response.status === 401 && session.onUnauthorized) session.onUnauthorized();
    throw new ApiError(response.status, data);
  }
  const etag = (response.headers.get("ETag") || "").replaceAll('"', "") || null;
  return { status: response.status, data, etag, headers: response.headers };
}

export const get = (path, params) => request("GET", path, { params }).then((r) => r.data);
