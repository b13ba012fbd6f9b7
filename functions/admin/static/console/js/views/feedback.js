// feedback (admins): the answers' ratings (GET .../feedback?rating=), with the counts per rating,
// who rated (display name, study role), when, the reason and tags, and the rated answer's session.
import { html, useState } from "../lib.js";
import { t } from "../i18n.js";
import { request, projectPath } from "../api.js";
import { useLoad, ErrorNote, Loading, Person, When } from "../components.js";

export function FeedbackView({ ctx }) {
  const [rating, setRating] = useState("");
  const list = useLoad(() => request("GET", projectPath("/feedback"), { params: { rating } }).then((r) => r.data), [rating]);
  const data = list.data;
  return html`<section class="feedback">
    <div class="toolbar">
      <label for="feedback-rating">${t("feedback.rating")}</label>
      <select id="feedback-rating" value=${rating} onChange=${(e) => setRating(e.target.value)}>
        <option value="">${t("feedback.all")}</option><option value="up">${t("feedback.up")}</option><option value="down">${t("feedback.down")}</option>
      </select>
    </div>
    <${Loading} loading=${list.loading && !data} />
    <${ErrorNote} error=${list.error} />
    ${data && html`<p class="counts" id="feedback-counts">${t("feedback.counts", { up: data.counts.up ?? 0, down: data.counts.down ?? 0 })}</p>`}
    ${data && (data.feedback.length ? html`<ul class="feedback-list">${data.feedback.map((f) => html`<li key=${`${f.message_id}-${f.user_id}`}
        class=${`rating rating-${f.rating}`} data-message-id=${f.message_id} data-rating=${f.rating}>
        <p class="meta"><span class="badge">${t(`feedback.${f.rating}`)}</span> · <${Person} userId=${f.user_id} members=${ctx.members} />
          ${" · "}<${When} iso=${f.at} tz=${ctx.tz} /> · <a href=${`#/sessions/${encodeURIComponent(f.session_id)}`}>${t("feedback.openSession")}</a></p>
        ${f.reason && html`<p class="text">${f.reason}</p>`}
        ${f.tags?.length > 0 && html`<p class="tags">${t("feedback.tags")} ${f.tags.map((tag) => html`<code key=${tag}>${tag}</code> `)}</p>`}
      </li>`)}</ul>` : html`<p class="empty">${t("feedback.empty")}</p>`)}
  </section>`;
}
