// WhatsApp, live (issue 14.3): a customer asking for a person, writing while a person answers,
// or a conversation taken over / handed back. A banner with a link to the conversation; on that
// conversation's own page the controls are reloaded (htmx) so the buttons follow the mode.
(function () {
  "use strict";
  const panel = document.getElementById("copilot-panel");
  if (!panel || !window.capatazLive) return;
  const current = panel.dataset.conversationId;
  const labels = {
    human_requested: panel.dataset.i18nWaHuman || "A customer asks for a person",
    message: panel.dataset.i18nWaMessage || "New WhatsApp message",
    new_conversation: panel.dataset.i18nWaNew || "New WhatsApp conversation",
  };

  function banner(ev) {
    let box = document.getElementById("whatsapp-alerts");
    if (!box) {
      box = document.createElement("div");
      box.id = "whatsapp-alerts";
      box.className = "whatsapp-alerts";
      box.setAttribute("role", "status");
      box.setAttribute("aria-live", "polite");
      panel.prepend(box);
    }
    const note = document.createElement("p");
    note.className = "alert alert-warning small";
    const link = document.createElement("a");
    link.href = "/chat/" + encodeURIComponent(ev.conversation_id) + "/";
    link.textContent = (labels[ev.event] || "WhatsApp") + ": " + (ev.title || "");
    note.append(link);
    if (ev.text) note.append(" — " + ev.text);
    box.prepend(note);
    while (box.children.length > 3) box.lastChild.remove();
  }

  // A new customer's conversation goes to the top of the side list's WhatsApp section.
  function listed(ev) {
    const list = document.querySelector(".chat-whatsapp");
    if (!list || list.querySelector('a[href="/chat/' + ev.conversation_id + '/"]')) return;
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = "/chat/" + encodeURIComponent(ev.conversation_id) + "/";
    const title = document.createElement("span");
    title.className = "chat-title";
    title.textContent = ev.title || "WhatsApp";
    link.append(title);
    item.append(link);
    list.prepend(item);
  }

  window.capatazLive("/ws/whatsapp/", (ev) => {
    if (ev.type !== "whatsapp") return;
    const here = String(ev.conversation_id) === String(current);
    if (here) {
      const controls = document.getElementById("whatsapp-controls");
      if (controls && window.htmx) {
        window.htmx.ajax("GET", location.pathname + "?part=whatsapp", { target: controls, swap: "outerHTML" });
      }
    }
    if (ev.event === "new_conversation") listed(ev);
    if (ev.event === "human_requested" || ev.event === "new_conversation" ||
        (ev.event === "message" && !here)) banner(ev);
  });
})();
