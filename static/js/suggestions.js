// Suggestions, live: one socket per page keeps the suggestion badge current and tells htmx to
// reload the list (`suggestions-changed` on <body>). The pages also poll, because a schedule
// run by a Celery worker cannot reach the embedded default's in-memory channel layer.
(function () {
  "use strict";
  const BACKOFF_FIRST_MS = 1000;
  const BACKOFF_CAP_MS = 30000;
  let attempt = 0;

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    let ws;
    try {
      ws = new WebSocket(scheme + location.host + "/ws/suggestions/");
    } catch (_) {
      retry();
      return;
    }
    ws.onopen = () => { attempt = 0; };
    ws.onmessage = (e) => {
      let ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      if (!ev || ev.type !== "suggestions" || typeof ev.new !== "number") return;
      document.querySelectorAll("[data-suggestions-count]").forEach((badge) => {
        badge.textContent = String(ev.new);
        badge.hidden = !ev.new;
      });
      document.body.dispatchEvent(new CustomEvent("suggestions-changed", { detail: ev }));
    };
    ws.onclose = (e) => {
      if (e.code === 4401 || e.code === 4403) return;  // not allowed: nothing to retry
      retry();
    };
  }

  function retry() {
    const step = Math.min(BACKOFF_CAP_MS, BACKOFF_FIRST_MS * 2 ** attempt);
    attempt += 1;
    setTimeout(connect, step / 2 + Math.random() * step / 2);
  }

  connect();
})();
