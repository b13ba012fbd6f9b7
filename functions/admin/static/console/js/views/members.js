// members: the project's team (display name, study role, project role); admins add, change and
// remove members (PUT / DELETE .../members/{user_id}; removing the last admin is refused: 409).
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath, seg } from "../api.js";
import { useLoad, ErrorNote, Status, Loading, Person, When, ConfirmButton } from "../components.js";

export const STUDY_ROLES = ["PI", "Sub-I", "CRC", "DM", "CRA", "Statistician", "Other"];
const EMPTY = { user_id: "", display_name: "", study_role: "CRC", project_role: "member" };

function MemberForm({ initial, onSave }) {
  const [form, setForm] = useState(initial);
  const set = (key) => (e) => setForm({ ...form, [key]: e.target.value });
  const submit = (e) => { e.preventDefault(); onSave(form); };
  return html`<form class="member-form" onSubmit=${submit} aria-labelledby="member-form-title">
    <h2 id="member-form-title">${t(initial.user_id ? "members.editTitle" : "members.addTitle")}</h2>
    <div class="field"><label for="member-user">${t("members.userId")}</label>
      <input id="member-user" name="user_id" required value=${form.user_id} readonly=${Boolean(initial.user_id)} onInput=${set("user_id")} /></div>
    <div class="field"><label for="member-name">${t("members.displayName")}</label>
      <input id="member-name" name="display_name" required value=${form.display_name} onInput=${set("display_name")} /></div>
    <div class="field"><label for="member-study-role">${t("members.studyRole")}</label>
      <select id="member-study-role" name="study_role" value=${form.study_role} onChange=${set("study_role")}>
        ${STUDY_ROLES.map((r) => html`<option key=${r} value=${r}>${t(`studyRoles.${r}`)}</option>`)}</select></div>
    <div class="field"><label for="member-project-role">${t("members.projectRole")}</label>
      <select id="member-project-role" name="project_role" value=${form.project_role} onChange=${set("project_role")}>
        <option value="member">${t("projectRoles.member")}</option><option value="admin">${t("projectRoles.admin")}</option></select></div>
    <button type="submit" id="member-save">${t("members.save")}</button>
  </form>`;
}

export function MembersView({ ctx }) {
  const list = useLoad(() => request("GET", projectPath("/members")).then((r) => r.data.items), [ctx.projectId]);
  const [editing, setEditing] = useState(EMPTY);
  const [status, setStatus] = useState(null);
  const [error, setError] = useState(null);
  const done = (text) => { setStatus({ kind: "info", text }); setError(null); list.reload(); };
  const save = async (form) => {
    try {
      const { user_id: userId, ...body } = form;
      await request("PUT", projectPath(seg`/members/${userId.trim()}`), { body });
      setEditing({ ...EMPTY });
      done(t("members.saved", { name: form.display_name }));
    } catch (err) { setError(err); }
  };
  const remove = async (member) => {
    try {
      await request("DELETE", projectPath(seg`/members/${member.user_id}`));
      done(t("members.removed", { name: member.display_name }));
    } catch (err) { setError(err); }
  };
  return html`<section class="members">
    <${Status} status=${status} />
    <${ErrorNote} error=${list.error || error} />
    <${Loading} loading=${list.loading && !list.data} />
    ${list.data && html`<table class="member-table">
      <caption>${t("members.caption", { count: list.data.length })}</caption>
      <thead><tr><th scope="col">${t("members.displayName")}</th><th scope="col">${t("members.userId")}</th>
        <th scope="col">${t("members.studyRole")}</th><th scope="col">${t("members.projectRole")}</th><th scope="col">${t("members.added")}</th>
        ${ctx.isAdmin && html`<th scope="col"><span class="visually-hidden">${t("common.actions")}</span></th>`}</tr></thead>
      <tbody>${list.data.map((m) => html`<tr key=${m.user_id} class="member" data-user-id=${m.user_id}>
        <td class="display-name">${m.display_name}</td><td><code>${m.user_id}</code></td>
        <td class="study-role">${t(`studyRoles.${m.study_role}`)}</td><td class="project-role">${t(`projectRoles.${m.project_role}`)}</td>
        <td><${When} iso=${m.added_at} tz=${ctx.tz} /> · <${Person} userId=${m.added_by} members=${list.data} /></td>
        ${ctx.isAdmin && html`<td class="row-actions">
          <button type="button" class="secondary edit-member" onClick=${() => setEditing({ ...m })}
            aria-label=${t("members.editOne", { name: m.display_name })}>${t("members.edit")}</button>
          <${ConfirmButton} className="remove-member" label=${t("members.remove")} question=${t("members.removeQuestion", { name: m.display_name })}
            confirmLabel=${t("members.removeConfirm")} onConfirm=${() => remove(m)} />
        </td>`}
      </tr>`)}</tbody>
    </table>`}
    ${ctx.isAdmin && html`<${MemberForm} key=${editing.user_id || "new"} initial=${editing} onSave=${save} />`}
  </section>`;
}
