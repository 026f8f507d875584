// The live approvals queue, for managers and admins: the page's socket (live.js) keeps the
// sidebar's pending count current and, on the queue page, reloads the rows (htmx) whenever an
// action is filed, decided, run or expires. Without it the pages still work: they are right on
// reload.
(function () {
  "use strict";
  window.capatazLive("/ws/approvals/", (ev) => {
    if (ev.type === "emergency") {  // an urgent ticket: alerts.js shows it
      document.body.dispatchEvent(new CustomEvent("capataz-emergency", { detail: ev }));
      return;
    }
    if (ev.type !== "approvals") return;
    if (typeof ev.pending === "number") {
      document.querySelectorAll("[data-pending-count]").forEach((badge) => {
        badge.textContent = String(ev.pending);
        badge.hidden = !ev.pending;
      });
    }
    if (ev.action !== null && ev.action !== undefined) {
      document.body.dispatchEvent(new CustomEvent("approvals-changed", { detail: ev }));
    }
  });
})();
