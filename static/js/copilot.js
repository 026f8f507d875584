// CopilotPanel: renders the typed turn events (copilot/events.py) that arrive over the htmx
// websocket extension. htmx owns the socket (connect, reconnect, ws-send of the form); this file
// only turns each JSON event into DOM, so streamed text shows up as it arrives.
(function () {
  "use strict";
  const panel = document.getElementById("copilot-panel");
  const thread = document.getElementById("chat-thread");
  const form = document.getElementById("chat-form");
  const input = document.getElementById("chat-input");
  const status = document.getElementById("chat-status");
  if (!panel || !thread || !form || !input) return;  // no conversation open: nothing to drive
  const t = (key) => panel.dataset["i18n" + key] || key;
  const turns = new Map();

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function scrollDown() {
    thread.scrollTop = thread.scrollHeight;
  }

  function dropEmpty() {
    const empty = document.getElementById("chat-empty");
    if (empty) empty.remove();
  }

  function turnView(turnId) {
    let view = turns.get(turnId);
    if (view) return view;
    dropEmpty();
    const li = el("li", "msg msg-assistant msg-streaming");
    li.dataset.turn = turnId;
    const agents = el("div", "msg-agents");
    const tools = el("ul", "msg-tools");
    const text = el("div", "msg-text");
    const thinking = el("div", "msg-thinking", t("Thinking"));
    li.append(agents, thinking, tools, text);
    thread.append(li);
    view = { li, agents, tools, text, thinking, pills: new Map(), toolRows: [] };
    turns.set(turnId, view);
    return view;
  }

  function addUserBubble(text) {
    dropEmpty();
    const li = el("li", "msg msg-user");
    li.append(el("div", "msg-text", text));
    thread.append(li);
    scrollDown();
  }

  const handlers = {
    thinking(ev) { turnView(ev.turn_id); },
    agent_start(ev) {
      const view = turnView(ev.turn_id);
      const pill = el("span", "pill pill-running", ev.label || ev.agent);
      pill.title = ev.intent + " · " + Math.round(ev.confidence * 100) + "%";
      view.agents.append(pill);
      view.pills.set(ev.agent + ":" + ev.intent, pill);
    },
    agent_end(ev) {
      const pill = turnView(ev.turn_id).pills.get(ev.agent + ":" + ev.intent);
      if (!pill) return;
      pill.classList.remove("pill-running");
      // A step that asked the operator something is waiting for an answer, not failing.
      const state = ev.yielded ? "pill-muted" : ev.success ? "pill-ok" : "pill-bad";
      pill.classList.add(ev.clarifying ? "pill-ask" : state);
    },
    tool_start(ev) {
      const view = turnView(ev.turn_id);
      const row = el("li", "tool tool-running", "⚙ " + ev.tool);
      row.dataset.tool = ev.tool;
      view.tools.append(row);
      view.toolRows.push(row);
    },
    tool_result(ev) {
      const row = lastToolRow(ev);
      if (!row) return;
      row.classList.add(ev.ok ? "tool-ok" : "tool-bad");
      if (ev.summary) row.append(el("span", "tool-summary", " — " + ev.summary));
    },
    tool_end(ev) {
      const row = lastToolRow(ev);
      if (row) row.classList.remove("tool-running");
    },
    text(ev) {
      const view = turnView(ev.turn_id);
      view.thinking.remove();
      view.text.textContent += ev.text;
      scrollDown();
    },
    approval_requested(ev) {
      const view = turnView(ev.turn_id);
      const note = el("div", "msg-approval", "⏸ " + t("Approval") + " (#" + ev.approval_id + ")");
      note.title = ev.summary;
      view.li.append(note);
    },
    consulted(ev) {
      const view = turnView(ev.turn_id);
      if (!ev.agents.length) return;
      const footer = el("div", "msg-consulted", t("Consulted") + ": ");
      ev.agents.forEach((a) => footer.append(
        el("span", "pill" + (a.clarifying ? " pill-ask" : a.success ? "" : " pill-bad"), a.label)));
      view.li.append(footer);
    },
    error(ev) {
      if (!ev.turn_id) {  // a refused frame: not part of a turn
        const li = el("li", "msg msg-error", t("Error") + ": " + ev.message);
        thread.append(li);
        scrollDown();
        return;
      }
      const view = turnView(ev.turn_id);
      view.li.append(el("div", "msg-error", ev.message));
    },
    completed(ev) {
      const view = turnView(ev.turn_id);
      view.thinking.remove();
      if (ev.text && view.text.textContent.trim() !== ev.text.trim()) view.text.textContent = ev.text;
      if (ev.message_id) view.li.id = "message-" + ev.message_id;
      view.li.classList.remove("msg-streaming");
      view.tools.querySelectorAll(".tool-running").forEach((r) => r.classList.remove("tool-running"));
      turns.delete(ev.turn_id);
      scrollDown();
    },
  };

  function lastToolRow(ev) {
    const view = turns.get(ev.turn_id);
    if (!view) return null;
    for (let i = view.toolRows.length - 1; i >= 0; i--) {
      if (view.toolRows[i].dataset.tool === ev.tool) return view.toolRows[i];
    }
    return null;
  }

  panel.addEventListener("htmx:wsBeforeMessage", (e) => {
    let event;
    try { event = JSON.parse(e.detail.message); } catch (_) { return; }  // HTML: let htmx swap it
    e.preventDefault();
    const handle = handlers[event.type];
    if (handle) handle(event);
    scrollDown();
  });

  panel.addEventListener("htmx:wsConfigSend", (e) => {
    // Send exactly the protocol frame; htmx would add its HEADERS object otherwise.
    const text = (e.detail.parameters.text || "").trim();
    if (!text) { e.preventDefault(); return; }
    e.detail.messageBody = JSON.stringify({ type: "message", text: text });
  });

  panel.addEventListener("htmx:wsAfterSend", () => {
    addUserBubble(input.value.trim());
    input.value = "";
    input.focus();
  });

  panel.addEventListener("htmx:wsOpen", () => { status.textContent = ""; status.className = "chat-status"; });
  panel.addEventListener("htmx:wsClose", () => {
    status.textContent = t("Offline");
    status.className = "chat-status chat-status-offline";
  });

  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      if (input.value.trim()) form.requestSubmit ? form.requestSubmit() : form.dispatchEvent(new Event("submit"));
    }
  });
  scrollDown();
})();
