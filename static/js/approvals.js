// The live approvals queue, for managers and admins: one socket per page keeps the sidebar's
// pending count current and, on the queue page, reloads the rows (htmx) whenever an action is
// filed, decided, run or expires. Without it the pages still work: they are right on reload.
(function () {
  "use strict";
  const BACKOFF_FIRST_MS = 1000;
  const BACKOFF_CAP_MS = 30000;
  let attempt = 0;

  function showCount(count) {
    document.querySelectorAll("[data-pending-count]").forEach((badge) => {
      badge.textContent = String(count);
      badge.hidden = !count;
    });
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    let ws;
    try {
      ws = new WebSocket(scheme + location.host + "/ws/approvals/");
    } catch (_) {
      retry();
      return;
    }
    ws.onopen = () => { attempt = 0; };
    ws.onmessage = (e) => {
      let ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      if (!ev || ev.type !== "approvals") return;
      if (typeof ev.pending === "number") showCount(ev.pending);
      if (ev.action !== null && ev.action !== undefined) {
        document.body.dispatchEvent(new CustomEvent("approvals-changed", { detail: ev }));
      }
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
