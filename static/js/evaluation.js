// A run's progress bar, live (V2): the evaluation socket (/ws/evaluation/) sends each run's
// progress to the organisation's managers. The bar's htmx poll (every 2 s) is the fallback
// where the socket hears nothing (the run works in another process on the embedded default);
// either way a finished run reloads the page with its results.
(function () {
  "use strict";
  const section = document.querySelector("[data-run-live]");
  if (!section || !window.WebSocket) return;
  const runId = Number(section.dataset.runLive);
  const bar = () => document.getElementById("run-progress");
  if (!bar() || bar().dataset.status === "done" || bar().dataset.status === "failed") return;
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const socket = new WebSocket(scheme + location.host + "/ws/evaluation/");
  socket.addEventListener("message", (message) => {
    let frame;
    try { frame = JSON.parse(message.data); } catch (err) { return; }
    if (frame.type !== "run_progress" || frame.run !== runId) return;
    const el = bar();
    if (!el) return;
    const progress = el.querySelector("progress");
    if (progress) { progress.max = frame.total || 1; progress.value = frame.done; }
    const text = el.querySelector("[data-progress-text]");
    if (text) text.textContent = frame.done + " / " + frame.total;
    if (frame.status === "done" || frame.status === "failed") {
      socket.close();
      location.reload();
    }
  });
})();
