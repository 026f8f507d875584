// Feedback on copilot answers (V5): thumbs up/down and "this should have been …" under every
// answer. Stored answers get their buttons from the page (evaluation/_feedback.html); answers that
// arrive live get a copy of #feedback-template when copilot.js says one is finished
// ("copilot:answer"). Each click posts the verdict and the server's fresh buttons replace these.
(function () {
  "use strict";

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
    } catch (err) {
      return "";
    }
  }

  function send(box, rating) {
    const select = box.querySelector("[data-should-be]");
    const body = new URLSearchParams();
    body.set("rating", rating);
    body.set("should_be", select ? select.value : "");
    box.setAttribute("aria-busy", "true");
    fetch(box.dataset.feedbackUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), "Content-Type": "application/x-www-form-urlencoded" },
      body: body,
    })
      .then((response) => response.text().then((text) => ({ ok: response.ok, text })))
      .then(({ ok, text }) => {
        box.removeAttribute("aria-busy");
        if (!ok) {
          box.dataset.error = text;
          box.title = text;
          return;
        }
        const holder = document.createElement("div");
        holder.innerHTML = text.trim();
        const fresh = holder.firstElementChild;
        if (fresh) box.replaceWith(fresh);
      })
      .catch(() => box.removeAttribute("aria-busy"));
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest(".msg-feedback [data-rating]");
    if (!button) return;
    const box = button.closest(".msg-feedback");
    // Clicking the verdict that is on takes it back (an agent still chosen keeps it a "down").
    send(box, button.classList.contains("is-on") ? "" : button.dataset.rating);
  });

  document.addEventListener("change", (event) => {
    const select = event.target.closest(".msg-feedback [data-should-be]");
    if (!select) return;
    const box = select.closest(".msg-feedback");
    // An agent chosen says the answer was wrong; "—" keeps whatever verdict is on.
    const on = box.querySelector("[data-rating].is-on");
    send(box, select.value ? "down" : (on ? on.dataset.rating : ""));
  });

  document.addEventListener("copilot:answer", (event) => {
    const { li, messageId } = event.detail || {};
    const template = document.getElementById("feedback-template");
    if (!li || !messageId || !template || li.querySelector(".msg-feedback")) return;
    const box = template.content.firstElementChild.cloneNode(true);
    box.dataset.feedbackFor = String(messageId);
    box.dataset.feedbackUrl = box.dataset.feedbackUrl.replace("/0/", "/" + messageId + "/");
    li.append(box);
  });
})();
