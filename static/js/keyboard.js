// The chat by keyboard and screen reader (issue 28.2):
// - each message is one tab stop: Tab reaches its first control, the arrow keys (and Home/End)
//   move between its controls — feedback, actions, consulted agents, links — so a long
//   conversation costs one Tab per message, not a dozen;
// - a finished answer or a manager's decision is announced once in a polite live region (the
//   thread itself is not live: streamed text would be read a word at a time);
// - after each answer the message box has the focus again, unless the user moved it elsewhere.
(function () {
  "use strict";
  const thread = document.getElementById("chat-thread");
  const input = document.getElementById("chat-input");
  const announcer = document.getElementById("chat-announce");
  if (!thread) return;

  const FOCUSABLE = "a[href], button:not([disabled]), summary, input:not([type=hidden]), select, textarea, [data-rove]";
  const KEYS = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

  function controls(li) {
    return Array.from(li.querySelectorAll(FOCUSABLE)).filter((node) => !node.closest("[hidden]"));
  }

  // One control of the message keeps tabindex 0 (the last one used, or the first).
  function rove(li) {
    const items = controls(li);
    if (!items.length) return;
    const current = items.find((node) => node.tabIndex === 0 && node.dataset.roving === "on") || items[0];
    items.forEach((node) => {
      node.dataset.roving = "on";
      node.tabIndex = node === current ? 0 : -1;
    });
  }

  function roveAll() {
    thread.querySelectorAll(":scope > li.msg").forEach(rove);
  }

  thread.addEventListener("keydown", (event) => {
    const li = event.target.closest && event.target.closest("#chat-thread > li.msg");
    if (!li || event.target.matches("input[type=text], textarea")) return;
    const items = controls(li);
    const at = items.indexOf(event.target);
    if (at < 0) return;
    let next = null;
    if (event.key in KEYS) next = items[(at + KEYS[event.key] + items.length) % items.length];
    else if (event.key === "Home") next = items[0];
    else if (event.key === "End") next = items[items.length - 1];
    if (!next) return;
    event.preventDefault();
    items.forEach((node) => { node.tabIndex = node === next ? 0 : -1; });
    next.focus();
  });

  // Messages and controls arrive live (answers, feedback buttons, actions): keep one stop each.
  new MutationObserver(roveAll).observe(thread, { childList: true, subtree: true });
  roveAll();

  function announce(text) {
    if (!announcer || !text) return;
    announcer.textContent = "";
    // A change after a tick is read even when the same words come twice.
    window.setTimeout(() => { announcer.textContent = text.slice(0, 400); }, 50);
  }

  function typingElsewhere() {
    const active = document.activeElement;
    return active && active !== document.body && active !== input && active.matches("input, textarea, select, [contenteditable]");
  }

  document.addEventListener("copilot:answer", (event) => {
    const li = event.detail && event.detail.li;
    const text = li ? (li.querySelector(".msg-text, .msg-body") || li).textContent.trim() : "";
    announce((announcer ? announcer.dataset.answer + ": " : "") + text);
    if (input && !input.disabled && !typingElsewhere()) input.focus({ preventScroll: true });
  });

  const panel = document.getElementById("copilot-panel");
  if (panel) {
    panel.addEventListener("copilot:event", (event) => {
      const ev = event.detail || {};
      if (ev.type === "approval_decided") announce(ev.text || ev.summary || "");
    });
  }
})();
