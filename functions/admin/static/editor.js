// Hot memory editor (no build step). Every piece of memory text reaches the page through
// textContent / text nodes, never innerHTML: a line containing <script> shows as text.
(function () {
  "use strict";

  var SECTIONS = ["System Rules", "User Preferences", "Active Context", "Lessons Learned"];
  var state = { project: "", token: "", version: null, revisionsCursor: null };

  function $(id) { return document.getElementById(id); }

  // el("li", {className: "x", dataset: {lineId: "1"}}, "text", childNode) - text is never parsed as HTML.
  function el(tag, props) {
    var node = document.createElement(tag);
    var p = props || {};
    Object.keys(p).forEach(function (key) {
      if (key === "dataset") {
        Object.keys(p.dataset).forEach(function (k) { node.dataset[k] = p.dataset[k]; });
      } else if (key === "onclick") {
        node.addEventListener("click", p.onclick);
      } else {
        node[key] = p[key];
      }
    });
    for (var i = 2; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function when(iso) {
    if (!iso) return "";
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
  }

  function showStatus(kind, message) {
    var box = $("status");
    box.className = kind;
    box.textContent = message;
  }

  function clearStatus() { var box = $("status"); box.className = ""; box.textContent = ""; }

  function ApiError(status, body) {
    this.status = status;
    this.body = body || {};
  }

  function explain(err, action) {
    if (!(err instanceof ApiError)) return action + " failed: " + (err && err.message ? err.message : String(err));
    var b = err.body;
    if (err.status === 409 && b.error === "last_admin") return action + " refused: " + b.reason + ".";
    if (err.status === 409 && b.error === "version_conflict") {
      return "Someone else saved first — reload. Your change was not saved (the hot memory is now at version " +
        b.current_version + "; you were editing version " + state.version + ").";
    }
    if (err.status === 422 && b.error === "over_token_cap") {
      return action + " refused: the hot memory would be " + b.tokens + " tokens, over the cap of " + b.cap +
        ". Nothing was saved; shorten or delete lines.";
    }
    if (err.status === 422 && b.error === "confirmation_required") {
      return action + " needs your confirmation: " + b.reason;
    }
    if (err.status === 401) return "Your token was refused (missing, invalid or expired). Sign in again.";
    if (err.status === 403) return "Not allowed: " + (b.reason || "you are not an admin of this project") + ".";
    if (err.status === 428) return "The request had no version (If-Match). Reload and try again.";
    return action + " failed (" + err.status + "): " + (b.reason || b.message || "unexpected error");
  }

  function api(method, path, opts) {
    var o = opts || {};
    var headers = { "Authorization": "Bearer " + state.token };
    if (o.body !== undefined) headers["Content-Type"] = "application/json";
    if (o.ifMatch !== undefined && o.ifMatch !== null) headers["If-Match"] = "\"" + o.ifMatch + "\"";
    var url = "/v1/projects/" + encodeURIComponent(state.project) + path;
    if (o.query) url += "?" + new URLSearchParams(o.query).toString();
    return fetch(url, {
      method: method,
      headers: headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
      cache: "no-store"
    }).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (!res.ok) throw new ApiError(res.status, data);
        return data;
      });
    });
  }

  function tokenClaims(token) {
    try {
      var part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      var json = decodeURIComponent(Array.prototype.map.call(atob(part), function (c) {
        return "%" + ("00" + c.charCodeAt(0).toString(16)).slice(-2);
      }).join(""));
      return JSON.parse(json);
    } catch (e) {
      return null;
    }
  }

  // ------------------------------------------------------------------------- hot memory
  function lineContent(line) { return (line.role_tag ? "[" + line.role_tag + "] " : "") + line.text; }

  function renderMemory(memory) {
    state.version = memory.version;
    $("version").textContent = "version " + memory.version;
    $("tokens").textContent = memory.tokens + " tokens" + (memory.cap ? " / cap " + memory.cap : "");
    $("markdown").value = memory.markdown;
    var box = $("lines");
    clear(box);
    if (!memory.lines.length) { box.append(el("p", { className: "meta" }, "The hot memory is empty.")); return; }
    var sections = SECTIONS.slice();
    memory.lines.forEach(function (ln) { if (sections.indexOf(ln.section) < 0) sections.push(ln.section); });
    sections.forEach(function (section) {
      var lines = memory.lines.filter(function (ln) { return ln.section === section; });
      if (!lines.length) return;
      box.append(el("h3", {}, section));
      var list = el("ul", {});
      lines.forEach(function (ln) {
        var evidence = ln.evidence && ln.evidence.length ? " · from messages " + ln.evidence.join(", ") : "";
        list.append(el("li", { className: "line", dataset: { lineId: ln.line_id, source: ln.source } },
          el("span", { className: "badge " + ln.source, title: ln.source === "admin" ? "written by an admin" : "learnt by the AI" }, ln.source),
          el("span", { className: "text" }, lineContent(ln)),
          el("span", { className: "scope", title: "who this line applies to" }, scopeOf(ln)),
          " ",
          el("button", { type: "button", className: "delete", onclick: function () { deleteLine(ln); } }, "Delete"),
          el("div", { className: "meta" }, "by " + ln.created_by + " · " + when(ln.created_at) + evidence)
        ));
      });
      box.append(list);
    });
  }

  // Who a line applies to: its role tag ([PI] lines to PIs, a user id's lines to that user), or everyone.
  function scopeOf(line) { return line.role_tag ? "applies to " + line.role_tag : "applies to everyone"; }

  function loadMemory() {
    return api("GET", "/memory").then(renderMemory);
  }

  function afterWrite(result, message) {
    renderMemory(result.memory);
    showStatus("info", message + " Now version " + result.memory.version + ", " + result.memory.tokens +
      " tokens (cap " + result.memory.cap + ").");
    $("reason").value = "";
    return Promise.all([loadRevisions(true), loadReview(), loadAudit()]);
  }

  function save() {
    var base = state.version;
    var reason = $("reason").value.trim() || null;
    return api("PUT", "/memory", { ifMatch: base, body: { markdown: $("markdown").value, reason: reason } })
      .then(function (result) {
        if (!result.changed) { showStatus("info", "Nothing changed."); return null; }
        return afterWrite(result, "Saved.");
      })
      .catch(function (err) { showStatus("error", explain(err, "Save")); });
  }

  function deleteLine(line) {
    if (!window.confirm("Delete this " + line.source + " line?\n\n" + lineContent(line))) return Promise.resolve();
    var reason = $("reason").value.trim();
    return api("DELETE", "/memory/lines/" + encodeURIComponent(line.line_id),
      { ifMatch: state.version, query: reason ? { reason: reason } : undefined })
      .then(function (result) { return afterWrite(result, "Line deleted."); })
      .catch(function (err) { showStatus("error", explain(err, "Delete")); });
  }

  // -------------------------------------------------------------------------- revisions
  function loadRevisions(reset) {
    if (reset) { state.revisionsCursor = null; clear($("revisions")); }
    var query = { limit: "20" };
    if (state.revisionsCursor) query.cursor = state.revisionsCursor;
    return api("GET", "/memory/revisions", { query: query }).then(function (page) {
      var list = $("revisions");
      page.items.forEach(function (rev) {
        var current = rev.version === state.version;
        list.append(el("li", { className: "revision", dataset: { version: String(rev.version) } },
          el("strong", {}, "v" + rev.version), current ? " (current)" : "",
          " · " + when(rev.created_at) + " · by " + rev.created_by + " · " + rev.tokens + " tokens",
          rev.reason ? el("div", { className: "meta" }, rev.reason) : null,
          el("button", { type: "button", className: "show-diff", onclick: function () { showDiff(rev.version); } }, "Diff"),
          " ",
          current ? null : el("button", { type: "button", className: "restore", onclick: function () { restore(rev.version); } }, "Restore")
        ));
      });
      state.revisionsCursor = page.next_cursor;
      $("more-revisions").hidden = !page.next_cursor;
    });
  }

  function showDiff(version) {
    return api("GET", "/memory/revisions/" + version).then(function (rev) {
      var d = rev.diff;
      var title = $("diff-title");
      title.hidden = false;
      title.textContent = "v" + rev.version + " against " + (d.previous_version ? "v" + d.previous_version : "nothing") +
        " · added " + (d.added_line_ids.join(", ") || "none") + " · removed " + (d.removed_line_ids.join(", ") || "none");
      var pre = $("diff");
      pre.hidden = false;
      pre.textContent = d.unified || "(no change in the document)";
    }).catch(function (err) { showStatus("error", explain(err, "Diff")); });
  }

  function restore(version) {
    if (!window.confirm("Restore version " + version + " as a new version?")) return Promise.resolve();
    var reason = $("reason").value.trim() || null;
    return api("POST", "/memory/revisions/" + version + "/restore", { ifMatch: state.version, body: { reason: reason } })
      .then(function (result) {
        if (!result.changed) { showStatus("info", "Version " + version + " is already the current document."); return null; }
        return afterWrite(result, "Restored version " + version + ".");
      })
      .catch(function (err) { showStatus("error", explain(err, "Restore")); });
  }

  // ----------------------------------------------------------------------- review queue
  function loadReview() {
    return api("GET", "/memory/review").then(function (page) {
      var list = $("review");
      clear(list);
      $("review-empty").hidden = page.items.length > 0;
      page.items.forEach(function (item) {
        var pending = item.status === "pending";
        var row = el("li", { className: "review-item", dataset: { itemId: item.item_id, status: item.status } },
          el("span", { className: "text" }, (item.role_tag ? "[" + item.role_tag + "] " : "") + item.text),
          el("div", { className: "meta" }, item.section + " · held: " + item.reason + " · " + item.status +
            (item.decided_by ? " by " + item.decided_by : "") +
            (item.evidence.length ? " · from messages " + item.evidence.join(", ") : "")));
        if (pending) {
          row.append(
            el("button", { type: "button", className: "approve", onclick: function () { decide(item, "approve", row); } }, "Approve"),
            " ",
            el("button", { type: "button", className: "reject", onclick: function () { decide(item, "reject", row); } }, "Reject"));
        }
        list.append(row);
      });
    });
  }

  // "System Rule hm-1" / "System Rules hm-1, hm-2" (ids only: the texts are shown as text nodes).
  function rulesLabel(rules) {
    return "System Rule" + (rules.length > 1 ? "s " : " ") + rules.map(function (r) { return r.line_id; }).join(", ");
  }

  function closeConfirmations() {
    Array.prototype.forEach.call(document.querySelectorAll("#review .confirm-relax"), function (panel) { panel.remove(); });
  }

  // The server refused the approval (422 confirmation_required): the candidate would relax System
  // Rules. Show those rules (text nodes only) and ask the admin to confirm; the confirmation is sent
  // with If-Match = the version the rules were read from, so it approves exactly what was shown.
  function askToConfirm(item, row, refusal) {
    closeConfirmations();
    var rules = refusal.rules || [];
    var list = el("ul", { className: "relaxed-rules" });
    rules.forEach(function (rule) {
      list.append(el("li", { className: "relaxed-rule", dataset: { lineId: rule.line_id } },
        el("code", { className: "line-id" }, rule.line_id), " ", el("span", { className: "text" }, lineContent(rule))));
    });
    var several = rules.length > 1;
    var panel = el("div", { className: "confirm-relax" },
      el("strong", {}, several ? "Approving this candidate would relax " + rules.length + " System Rules:"
        : "Approving this candidate would relax this System Rule:"),
      list,
      el("p", { className: "meta" }, "The candidate becomes an admin line and the AI follows it as well as " +
        (several ? "these rules" : "this rule") + ". Approve only if " + (several ? "they" : "it") +
        " should no longer hold as written."),
      el("div", { className: "row" },
        el("button", { type: "button", className: "confirm-approve", onclick: function () {
          decide(item, "approve", row, refusal);
        } }, several ? "Approve and relax these rules" : "Approve and relax this rule"),
        el("button", { type: "button", className: "cancel-approve", onclick: function () {
          panel.remove();
          showStatus("info", "Not approved; the candidate is still pending.");
        } }, "Cancel")));
    panel.setAttribute("role", "group");
    panel.setAttribute("aria-label", "Confirm the approval");
    row.append(panel);
    showStatus("warn", "Approving this candidate would relax " + rulesLabel(rules) +
      ": confirm or cancel in the review queue.");
    panel.querySelector("button.cancel-approve").focus();
  }

  // confirmation: the 422 confirmation_required body the admin confirmed (absent: a first attempt).
  function decide(item, verdict, row, confirmation) {
    var reason = $("reason").value.trim() || null;
    var body = { reason: reason };
    var opts = { body: body };
    if (confirmation) { body.confirm = true; opts.ifMatch = confirmation.current_version; }
    return api("POST", "/memory/review/" + encodeURIComponent(item.item_id) + "/" + verdict, opts)
      .then(function (result) {
        closeConfirmations();
        if (verdict === "approve") {
          return afterWrite(result, confirmation ?
            "Candidate approved; it relaxes " + rulesLabel(confirmation.rules || []) + "." : "Candidate approved.");
        }
        showStatus("info", "Candidate rejected.");
        return Promise.all([loadReview(), loadAudit()]);
      })
      .catch(function (err) {
        var b = err instanceof ApiError ? err.body : {};
        if (verdict === "approve" && !confirmation && err.status === 422 && b.error === "confirmation_required") {
          askToConfirm(item, row, b);
          return;
        }
        closeConfirmations();
        if (confirmation && err.status === 409 && b.error === "version_conflict") {
          showStatus("error", "The hot memory changed since the rule was shown (now version " + b.current_version +
            "). Nothing was approved: reload and approve again to see the rules as they are now.");
          return;
        }
        showStatus("error", explain(err, verdict === "approve" ? "Approve" : "Reject"));
      });
  }

  // ---------------------------------------------------------------------------- members
  function loadMembers() {
    return api("GET", "/members").then(function (page) {
      var body = document.querySelector("#members tbody");
      clear(body);
      page.items.forEach(function (m) {
        body.append(el("tr", { className: "member", dataset: { userId: m.user_id } },
          el("td", { className: "user-id" }, m.user_id),
          el("td", { className: "display-name" }, m.display_name),
          el("td", { className: "project-role" }, m.project_role),
          el("td", { className: "study-role" }, m.study_role),
          el("td", {},
            el("button", { type: "button", className: "edit-member", onclick: function () { editMember(m); } }, "Edit"),
            " ",
            el("button", { type: "button", className: "remove-member", onclick: function () { removeMember(m); } },
              "Remove"))));
      });
    });
  }

  function editMember(m) {
    $("member-user").value = m.user_id;
    $("member-name").value = m.display_name;
    $("member-project-role").value = m.project_role;
    $("member-study-role").value = m.study_role;
  }

  function saveMember() {
    var user = $("member-user").value.trim();
    if (!user) { showStatus("error", "Enter the member's user id."); return Promise.resolve(); }
    var body = { project_role: $("member-project-role").value, study_role: $("member-study-role").value,
      display_name: $("member-name").value.trim() || user };
    return api("PUT", "/members/" + encodeURIComponent(user), { body: body })
      .then(function (m) { showStatus("info", "Member " + m.user_id + " saved (" + m.project_role + ", " + m.study_role + ")."); return loadMembers(); })
      .catch(function (err) { showStatus("error", explain(err, "Saving the member")); });
  }

  function removeMember(m) {
    if (!window.confirm("Remove " + m.user_id + " from the project? Their next request is refused.")) return Promise.resolve();
    return api("DELETE", "/members/" + encodeURIComponent(m.user_id))
      .then(function () { showStatus("info", "Member " + m.user_id + " removed."); return loadMembers(); })
      .catch(function (err) { showStatus("error", explain(err, "Removing the member")); });
  }

  // ------------------------------------------------------------------------------ audit
  function loadAudit() {
    return api("GET", "/memory/audit", { query: { limit: "30" } }).then(function (page) {
      var list = $("audit");
      clear(list);
      page.items.forEach(function (a) {
        list.append(el("li", { className: "audit" },
          when(a.at) + " · " + a.actor + " · " + a.action + " · " + a.target + (a.reason ? " · why: " + a.reason : "")));
      });
    });
  }

  // --------------------------------------------------------------------------- feedback
  // The answers' ratings (newest first); a down-vote's reason is what the next distillation reads.
  function loadFeedback() {
    return api("GET", "/feedback").then(function (page) {
      var list = $("feedback");
      clear(list);
      $("feedback-counts").textContent = "up " + page.counts.up + " · down " + page.counts.down;
      page.feedback.slice().reverse().slice(0, 50).forEach(function (f) {
        list.append(el("li", { className: "feedback " + f.rating },
          when(f.at) + " · " + f.user_id + (f.study_role ? " [" + f.study_role + "]" : "") + " · " +
          (f.rating === "up" ? "\u{1F44D}" : "\u{1F44E}") + " · message " + f.message_id +
          (f.reason ? " · " + f.reason : "") + (f.tags && f.tags.length ? " · tags: " + f.tags.join(", ") : "")));
      });
    }).catch(function () { $("feedback-counts").textContent = "Feedback could not be loaded."; });
  }

  // ---------------------------------------------------------------------------- session
  function loadAll() {
    clearStatus();
    return loadMemory()
      .then(function () { return Promise.all([loadRevisions(true), loadReview(), loadAudit(), loadFeedback(), loadMembers()]); })
      .then(function () { $("app").hidden = false; $("login").hidden = true; $("signout").hidden = false; })
      .catch(function (err) { showStatus("error", explain(err, "Loading")); });
  }

  function signIn() {
    state.project = $("project").value.trim();
    state.token = $("token").value.trim().replace(/^Bearer\s+/i, "");
    if (!state.project || !state.token) { showStatus("error", "Enter the project and a token."); return; }
    sessionStorage.setItem("am.project", state.project);
    sessionStorage.setItem("am.token", state.token);
    var claims = tokenClaims(state.token);
    $("who").textContent = "project " + state.project + (claims && claims.sub ? " · signed in as " + claims.sub : "");
    loadAll();
  }

  function signOut() {
    sessionStorage.removeItem("am.token");
    state.token = "";
    $("app").hidden = true; $("login").hidden = false; $("signout").hidden = true;
    $("who").textContent = "";
    clearStatus();
  }

  document.addEventListener("DOMContentLoaded", function () {
    $("signin").addEventListener("click", signIn);
    $("signout").addEventListener("click", signOut);
    $("reload").addEventListener("click", loadAll);
    $("save").addEventListener("click", save);
    $("member-save").addEventListener("click", saveMember);
    $("more-revisions").addEventListener("click", function () { loadRevisions(false); });
    var project = sessionStorage.getItem("am.project");
    var token = sessionStorage.getItem("am.token");
    if (project) $("project").value = project;
    if (project && token) { $("token").value = token; signIn(); }
  });
})();
