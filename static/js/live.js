// One organisation-wide live socket (approvals count, suggestions count): connect, parse each
// JSON frame and hand it to `onFrame`, reconnect with jittered back-off; a 4401/4403 close means
// "not allowed here" and is not retried. The pages work without it: they poll or reload.
(function () {
  "use strict";
  const BACKOFF_FIRST_MS = 1000;
  const BACKOFF_CAP_MS = 30000;

  window.capatazLive = function (path, onFrame) {
    let attempt = 0;

    function connect() {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      let ws;
      try {
        ws = new WebSocket(scheme + location.host + path);
      } catch (_) {
        retry();
        return;
      }
      ws.onopen = () => { attempt = 0; };
      ws.onmessage = (e) => {
        let frame;
        try { frame = JSON.parse(e.data); } catch (_) { return; }
        if (frame) onFrame(frame);
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
  };
})();
