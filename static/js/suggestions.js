// Suggestions, live: the page's socket (live.js) keeps the suggestion badge current and tells
// htmx to reload the list (`suggestions-changed` on <body>). The pages also poll, because a
// schedule run by a Celery worker cannot reach the embedded default's in-memory channel layer.
(function () {
  "use strict";
  window.capatazLive("/ws/suggestions/", (ev) => {
    if (ev.type !== "suggestions" || typeof ev.new !== "number") return;
    document.querySelectorAll("[data-suggestions-count]").forEach((badge) => {
      const number = badge.querySelector("[data-suggestions-number]");
      (number || badge).textContent = String(ev.new);  // the words for screen readers stay
      badge.hidden = !ev.new;
    });
    document.body.dispatchEvent(new CustomEvent("suggestions-changed", { detail: ev }));
  });
})();
