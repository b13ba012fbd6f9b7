// The console's views, in navigation order. admin: only the project's admins see the view (its
// data routes are admin-only in agent_memory/http/routes.py ROUTE_POLICY); the others use routes
// a member may call.
import { MemoryView } from "./memory.js";
import { ReviewView } from "./review.js";
import { HistoryView } from "./history.js";
import { RemindersView } from "./reminders.js";
import { PatientsView } from "./patients.js";
import { SessionsView } from "./sessions.js";
import { MembersView } from "./members.js";
import { FeedbackView } from "./feedback.js";
import { AuditView } from "./audit.js";

export const VIEWS = [
  { name: "memory", admin: true, component: MemoryView },
  { name: "review", admin: true, component: ReviewView },
  { name: "history", admin: false, component: HistoryView },
  { name: "reminders", admin: false, component: RemindersView },
  { name: "patients", admin: false, component: PatientsView },
  { name: "sessions", admin: false, component: SessionsView },
  { name: "members", admin: false, component: MembersView },
  { name: "feedback", admin: true, component: FeedbackView },
  { name: "audit", admin: true, component: AuditView },
];

/** The views a caller sees: all for an admin, the member views otherwise. */
export function viewsFor(isAdmin) {
  return VIEWS.filter((v) => isAdmin || !v.admin);
}
