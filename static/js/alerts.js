// Managers hear of an emergency at once: the approvals socket (approvals.js) passes on the
// organisation's urgent tickets as `capataz-emergency` events; each becomes a toast with the
// ticket's link and its conversation's, until dismissed.
(function () {
  "use strict";
  const box = document.getElementById("emergency-toasts");
  if (!box) return;
  const t = (key) => box.dataset["i18n" + key] || key;

  function link(href, text) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    return a;
  }

  document.body.addEventListener("capataz-emergency", (e) => {
    const ev = e.detail || {};
    const ticket = parseInt(ev.ticket, 10);
    if (!ticket || box.querySelector('[data-ticket="' + ticket + '"]')) return;
    const toast = document.createElement("div");
    toast.className = "emergency-toast";
    toast.dataset.ticket = String(ticket);
    const body = document.createElement("div");
    const title = document.createElement("strong");
    title.textContent = "⚠ " + t("Title") + " · ";
    body.append(title, link(box.dataset.ticketsUrl + "#ticket-" + ticket, t("Ticket") + " #" + ticket));
    if (ev.summary) body.append(document.createElement("br"), document.createTextNode(ev.summary));
    const conversation = parseInt(ev.conversation, 10);
    if (conversation) {
      body.append(document.createElement("br"), link(box.dataset.chatUrl + conversation + "/", t("Conversation")));
    }
    const close = document.createElement("button");
    close.type = "button";
    close.setAttribute("aria-label", t("Close"));
    close.textContent = "✕";
    close.addEventListener("click", () => toast.remove());
    toast.append(body, close);
    box.append(toast);
  });
})();
