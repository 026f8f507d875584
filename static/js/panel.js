// The CopilotPanel's side pieces (copilot/panel_views.py): the record under discussion beside the
// chat, the actions under each answer (open, approve/reject inline, undo, copy), and a message
// prefilled from the Agenda's "book here". It follows the turn through the `copilot:event`
// events static/js/copilot.js dispatches on the panel; the partials come from the server (htmx).
(function () {
  "use strict";
  const panel = document.getElementById("copilot-panel");
  if (!panel) return;
  const conversationId = panel.dataset.conversationId;
  const input = document.getElementById("chat-input");

  // "Book here" (the Agenda): the message waits in the composer for the operator to complete.
  const params = new URLSearchParams(location.search);
  const prefill = params.get("prefill");
  if (prefill && input && !input.value) {
    input.value = prefill.slice(0, 300);
    input.focus();
    params.delete("prefill");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  }

  // Phones: the side panel starts folded under the chat.
  const toggle = document.getElementById("chat-context-toggle");
  if (toggle && window.matchMedia("(max-width: 900px)").matches) toggle.open = false;

  function load(url, target, swap) {
    if (window.htmx) return window.htmx.ajax("GET", url, { target: target, swap: swap || "outerHTML" });
    return fetch(url, { credentials: "same-origin" }).then((r) => r.text()).then((html) => {
      if (swap === "beforeend") target.insertAdjacentHTML("beforeend", html);
      else target.outerHTML = html;
    });
  }

  const base = "/chat/" + encodeURIComponent(conversationId || "") + "/";

  panel.addEventListener("copilot:event", (e) => {
    const ev = e.detail || {};
    if (!conversationId) return;
    if (ev.type === "accepted" && /^undo-/.test(ev.client_id || "")) {
      // An undo is a note of the panel's, not something the operator typed: shown as one.
      const note = document.getElementById("message-" + ev.message_id);
      if (note) note.classList.replace("msg-user", "msg-system");
    } else if (ev.type === "completed" && ev.message_id) {
      // The answer is on the page: its actions, then the record it may have moved on to.
      const li = document.getElementById("message-" + ev.message_id);
      if (li && li.classList.contains("msg-assistant") && !li.querySelector(".msg-actions")) {
        load(base + "answers/" + ev.message_id + "/actions/", li, "beforeend");
      }
      document.body.dispatchEvent(new CustomEvent("copilot:context"));
      // A decision turn ran an approved action: the cards still in motion show how it ended.
      document.querySelectorAll(".approval-card.approval-approved, .approval-card.approval-executing").forEach((card) => {
        load("/chat/approvals/" + encodeURIComponent(card.dataset.approvalId) + "/", card, "outerHTML");
      });
    } else if (ev.type === "approval_decided" && ev.approval_id) {
      document.querySelectorAll('.approval-card[data-approval-id="' + ev.approval_id + '"]').forEach((card) => {
        load("/chat/approvals/" + encodeURIComponent(ev.approval_id) + "/", card, "outerHTML");
      });
    }
  });

  // Copy an answer's text (the text only: not its buttons or footer).
  document.addEventListener("click", (e) => {
    const button = e.target.closest("[data-copy]");
    if (!button) return;
    const li = button.closest(".msg");
    const text = li ? (li.querySelector(".msg-text") || li).innerText.trim() : "";
    const done = () => {
      const label = button.textContent;
      button.textContent = button.dataset.copied || label;
      setTimeout(() => { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, () => {});
    } else {  // plain http (a LAN install): the old way
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.append(area);
      area.select();
      try { document.execCommand("copy"); done(); } catch (_) { /* nothing to do */ }
      area.remove();
    }
  });
})();
