// What the server offers beyond today's API, read from its OpenAPI document (GET /v1/openapi.json,
// public, generated from the handlers): a feature whose route is not there is not offered, and the
// view says so, instead of calling a route that does not exist. The routes are the ones the
// console's README section proposes for the backend.
import { request } from "./api.js";

const P = "/v1/projects/{project_id}";
export const ROUTES = {
  lineEvidence: ["get", `${P}/memory/lines/{line_id}/evidence`],
  reviewEvidence: ["get", `${P}/memory/review/{item_id}/evidence`],
  reportRevisions: ["get", `${P}/reports/{iso_week}/revisions`],
  yearlySummaries: ["get", `${P}/yearly-summaries`],
  sessionMessages: ["get", `${P}/sessions/{session_id}/messages`],
};

/** {name: bool} for ROUTES, and approveText: the approve body takes reworded "text". */
export async function loadCapabilities() {
  let doc = {};
  try {
    doc = (await request("GET", "/v1/openapi.json", { auth: false })).data || {};
  } catch {
    doc = {};
  }
  const caps = {};
  for (const [name, [method, path]] of Object.entries(ROUTES)) caps[name] = Boolean(doc.paths?.[path]?.[method]);
  caps.approveText = Boolean(doc.components?.schemas?.ApproveRequest?.properties?.text);
  return caps;
}
