// CopilotPanel: the chat's own websocket client and the renderer of the typed turn events
// (agents/events.py).
//
// The server logs every event of a conversation with a consecutive `seq`; this client remembers
// the last one it processed and reconnects with `?after=<seq>`, so it misses nothing and, since it
// drops anything at or below that number, processes nothing twice. The page starts at its
// `data-replay-from` (just before a turn still queued or running), which may replay things the
// page already shows: a user message is shown once per message id, a turn once per turn id, and a
// turn whose answer is already on the page (`data-turn` of a stored answer) is not drawn again.
//
// Sent messages go through an outbox kept in sessionStorage: each has its own `client_id`, shows
// at once as a pending bubble and stays until the server's `accepted` with that id. Messages go out
// one at a time — the next after the previous one is accepted or refused — so a refusal (which
// carries no id) always belongs to the one in flight; on every (re)open the head is sent again (the
// server stores a `client_id` once).
//
// A turn's text is kept in segments, one per run of text from one speaker (`agent`, "" for the
// orchestrator). A `retract` event marks that speaker's segments as replaced (struck through, with
// a note) and they stay where they are, before the text that replaces them; `completed` checks and
// corrects only the segments that were not retracted.
(function () {
  "use strict";
  const panel = document.getElementById("copilot-panel");
  const thread = document.getElementById("chat-thread");
  const form = document.getElementById("chat-form");
  const input = document.getElementById("chat-input");
  const status = document.getElementById("chat-status");
  const conversationId = panel && panel.dataset.conversationId;
  if (!conversationId || !thread || !status) return;  // no conversation open
  // A supervisor reading a member's conversation: live, but no composer and nothing to send.
  const readOnly = panel.dataset.readOnly === "true";
  if (!readOnly && (!form || !input)) return;

  const lineBox = document.getElementById("direct-line");
  const t = (key) => panel.dataset["i18n" + key] || key;
  // An agent by its label in the screen's language (#agent-labels, copilot/_answers_live.html);
  // the event's label is in the message's.
  const labelsNode = document.getElementById("agent-labels");
  const agentLabels = labelsNode ? JSON.parse(labelsNode.textContent || "{}") : {};
  const agentLabel = (agent, fallback) => agentLabels[agent] || fallback || agent || "";
  const BACKOFF_FIRST_MS = 500;
  const BACKOFF_CAP_MS = 10000;
  const RESEND_UNAVAILABLE_MS = 3000;  // the server could not store it: try again, a bit later
  const CLIENT_ID = /^[A-Za-z0-9_.:-]{1,64}$/;  // what the server accepts (copilot/consumers.py)
  const OUTBOX_KEY = "capataz:outbox:" + conversationId;

  let lastSeq = parseInt(panel.dataset.replayFrom, 10) || 0;
  let socket = null;
  let attempt = 0;  // failed connections in a row: the back-off's exponent
  let reconnectTimer = null;
  let resendTimer = null;
  let inFlight = null;  // client_id of the outbox message sent on this socket, not yet answered

  const turns = new Map();  // turn_id → its view while it is being answered
  const doneTurns = new Set();  // turns whose answer is on the page: never drawn again
  thread.querySelectorAll(".msg-assistant[data-turn]").forEach((li) => doneTurns.add(li.dataset.turn));

  // --- DOM helpers ---------------------------------------------------------------------------

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function messageEl(messageId) {
    return messageId ? document.getElementById("message-" + messageId) : null;
  }

  function pendingEl(clientId) {
    return thread.querySelector('.msg-pending[data-client-id="' + clientId + '"]');
  }

  // On a wide screen the thread scrolls; on a phone it grows and the page scrolls instead, and
  // following the conversation means bringing its newest message into the window.
  function pageScrolls() {
    return thread.scrollHeight <= thread.clientHeight + 1;
  }

  function nearBottom() {
    if (pageScrolls()) {
      return document.documentElement.scrollHeight - window.scrollY - window.innerHeight < 160;
    }
    return thread.scrollHeight - thread.scrollTop - thread.clientHeight < 80;
  }

  function scrollDown() {
    if (pageScrolls()) {
      const last = thread.querySelector(":scope > li:last-child");
      if (last) last.scrollIntoView({ block: "end" });
      return;
    }
    thread.scrollTop = thread.scrollHeight;
  }

  // Whether the reader follows the conversation: decided when they scroll, not when an answer
  // grows under them (its rendered text, steps and actions arrive after it was scrolled to), so
  // what comes next — a decision's result, say — is still brought into view.
  let following = true;
  function track() { following = nearBottom(); }
  thread.addEventListener("scroll", track, { passive: true });
  window.addEventListener("scroll", track, { passive: true });
  document.addEventListener("htmx:afterSettle", (e) => {
    if (following && thread.contains(e.target)) scrollDown();
  });

  function dropEmpty() {
    const empty = document.getElementById("chat-empty");
    if (empty) empty.remove();
  }

  // New content goes last, but before messages that are still only in the outbox: the server
  // will place those after whatever it is answering now.
  function place(li) {
    dropEmpty();
    thread.insertBefore(li, thread.querySelector(".msg-pending"));
  }

  function userBubble(text) {
    const li = el("li", "msg msg-user");
    li.append(el("div", "msg-text", text));
    return li;
  }

  // A small line under a user message (deferred, refused); one per message and kind.
  function noteUnder(bubble, kind, text, cls) {
    const key = kind + ":" + (bubble ? bubble.id || bubble.dataset.clientId : "");
    let note = thread.querySelector('.msg-note[data-note="' + key + '"]');
    if (!note) {
      note = el("li", "msg-note" + (cls ? " " + cls : ""));
      note.dataset.note = key;
      note.setAttribute("role", "status");
      if (bubble) bubble.after(note); else place(note);
    }
    note.textContent = text;
    return note;
  }

  function dropNotes(bubble, kind) {
    if (!bubble) return;
    const key = kind + ":" + (bubble.id || bubble.dataset.clientId);
    thread.querySelectorAll('.msg-note[data-note="' + key + '"]').forEach((n) => n.remove());
  }

  // --- the outbox ----------------------------------------------------------------------------

  function loadOutbox() {
    try {
      const stored = JSON.parse(sessionStorage.getItem(OUTBOX_KEY) || "[]");
      if (!Array.isArray(stored)) return [];
      return stored.filter((m) => m && typeof m.text === "string" && CLIENT_ID.test(m.client_id));
    } catch (_) {
      return [];  // storage disabled or garbled: start empty
    }
  }

  function saveOutbox() {
    try {
      if (outbox.length) sessionStorage.setItem(OUTBOX_KEY, JSON.stringify(outbox));
      else sessionStorage.removeItem(OUTBOX_KEY);
    } catch (_) { /* storage full or disabled: the outbox still lives in this page */ }
  }

  function newClientId() {
    const c = window.crypto;
    if (c && typeof c.randomUUID === "function") return c.randomUUID();  // secure contexts only
    if (c && typeof c.getRandomValues === "function") {
      return Array.from(c.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
    }
    return Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 12);
  }

  function pendingBubble(item) {
    const li = userBubble(item.text);
    li.classList.add("msg-pending");
    li.dataset.clientId = item.client_id;
    // Which line shows depends on the connection (CSS: .is-offline on the panel).
    const meta = el("div", "msg-meta");
    meta.append(el("span", "msg-meta-online", t("Sending")), el("span", "msg-meta-offline", t("Waiting")));
    li.append(meta);
    dropEmpty();
    thread.append(li);
    return li;
  }

  function isOpen() {
    return socket !== null && socket.readyState === WebSocket.OPEN;
  }

  function pump() {
    if (inFlight || resendTimer || !outbox.length || !isOpen()) return;
    const item = outbox[0];
    inFlight = item.client_id;
    socket.send(JSON.stringify({
      type: "message", text: item.text, client_id: item.client_id, consult: item.consult || [] }));
  }

  function submit() {
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    // The agents ticked under the composer must be consulted for this message (T3).
    const ticked = Array.from(form.querySelectorAll('input[name="consult"]:checked'));
    sendText(text, ticked.map((box) => box.value));
    ticked.forEach((box) => { box.checked = false; });
  }

  // Through the outbox like anything typed: stored once, resent after a reconnect.
  function sendText(text, consult) {
    const item = { client_id: newClientId(), text: text, consult: consult || [] };
    outbox.push(item);
    saveOutbox();
    pendingBubble(item);
    input.focus();
    scrollDown();
    pump();
  }

  // A refused frame (no seq, no turn) answers the message in flight, if there is one.
  function refused(ev) {
    const item = inFlight && outbox.find((m) => m.client_id === inFlight);
    inFlight = null;
    if (!item) {
      place(el("li", "msg msg-error", t("Error") + ": " + ev.message));
      return;
    }
    const bubble = pendingEl(item.client_id);
    if (ev.code === "unavailable") {  // not stored, but nothing wrong with it: keep it, retry
      noteUnder(bubble, "refused", ev.message, "msg-note-bad");
      resendTimer = setTimeout(() => { resendTimer = null; pump(); }, RESEND_UNAVAILABLE_MS);
      return;
    }
    // Refused for what it is: sending it again would be refused again. Give it back to fix.
    outbox = outbox.filter((m) => m !== item);
    saveOutbox();
    if (bubble) {
      bubble.classList.replace("msg-pending", "msg-refused");
      const meta = bubble.querySelector(".msg-meta");
      if (meta) meta.remove();
    }
    noteUnder(bubble, "refused", t("Error") + ": " + ev.message, "msg-note-bad");
    if (input && !input.value.trim()) input.value = item.text;
    pump();
  }

  // --- turn views ----------------------------------------------------------------------------

  function turnView(turnId) {
    let view = turns.get(turnId);
    if (view) return view;
    const li = el("li", "msg msg-assistant msg-streaming");
    li.dataset.turn = turnId;
    // The agents and tool calls go to one "what I did" block after the text (answers.js).
    const text = el("div", "msg-text");
    const thinking = el("div", "msg-thinking", t("Thinking"));
    li.append(thinking, text);
    place(li);
    view = { li, text, thinking, problem: null, seg: null, afterNote: false, streamed: 0, retracted: new Set() };
    turns.set(turnId, view);
    return view;
  }

  // The segment the next text of `agent` goes to: the current one if it is that speaker's.
  function segment(view, agent) {
    if (!view.seg || view.seg.dataset.agent !== agent) {
      view.seg = el("span", "msg-seg");
      view.seg.dataset.agent = agent;
      view.text.append(view.seg);
    }
    return view.seg;
  }

  function liveSegments(view) {
    return Array.from(view.text.querySelectorAll(".msg-seg:not(.msg-retracted)"));
  }

  // The reply as the server stored it, after whatever was retracted.
  function setLiveText(view, text) {
    liveSegments(view).forEach((seg) => seg.remove());
    view.seg = null;
    if (text) segment(view, "").textContent = text;
  }

  // Notes on retracted text, by the retraction's reason (a model failure's kind otherwise).
  const RETRACT_NOTES = { not_small_talk: "Overruled" };

  const handlers = {
    accepted(ev) {
      const own = ev.client_id ? outbox.findIndex((m) => m.client_id === ev.client_id) : -1;
      if (own >= 0) {
        outbox.splice(own, 1);
        saveOutbox();
      }
      if (ev.client_id && ev.client_id === inFlight) inFlight = null;
      const pending = ev.client_id ? pendingEl(ev.client_id) : null;
      const shown = messageEl(ev.message_id);
      if (pending && shown) {
        pending.remove();  // the page already had it (rendered from the server)
      } else if (pending) {
        dropNotes(pending, "refused");
        pending.classList.remove("msg-pending");
        pending.id = "message-" + ev.message_id;
        const meta = pending.querySelector(".msg-meta");
        if (meta) meta.remove();
      } else if (!shown) {  // another tab's message
        const li = userBubble(ev.text);
        li.id = "message-" + ev.message_id;
        place(li);
      }
      pump();
    },
    deferred(ev) {
      noteUnder(messageEl(ev.message_id), "deferred", ev.message, "");
    },
    thinking(ev) {
      dropNotes(messageEl(ev.message_id), "deferred");
      turnView(ev.turn_id);
    },
    // Drawn by answers.js in the answer's "what I did" block; here only the turn's view.
    agent_start(ev) { turnView(ev.turn_id); },
    agent_end(ev) { turnView(ev.turn_id); },
    tool_start(ev) { turnView(ev.turn_id); },
    tool_result(ev) { turnView(ev.turn_id); },
    tool_end(ev) { turnView(ev.turn_id); },
    // A chunk comes twice: live at once (no seq) and logged at its step's end (seq, consecutive
    // chunks folded). `at` is its offset in the turn's text: only what goes past what this view
    // shows is appended; a live chunk past a gap waits for the logged copy.
    text(ev) {
      const view = turnView(ev.turn_id);
      view.thinking.remove();
      let chunk = ev.text;
      if (typeof ev.at === "number") {
        if (ev.at > view.streamed || ev.at + chunk.length <= view.streamed) return;
        chunk = chunk.slice(view.streamed - ev.at);
        view.streamed += chunk.length;
      }
      if (view.afterNote) {  // the note ends its line: no blank lines before what replaces it
        chunk = chunk.replace(/^\n+/, "");
        view.afterNote = !chunk;
      }
      segment(view, ev.agent || "").textContent += chunk;
    },
    // Text already shown that the answer will not keep: it stays, marked, before what replaces it.
    retract(ev) {
      const view = turns.get(ev.turn_id);
      if (!view) return;
      const agent = ev.agent || "";
      if (typeof ev.at === "number") {  // live, then logged: once
        const key = agent + "@" + ev.at;
        if (view.retracted.has(key)) return;
        view.retracted.add(key);
      }
      const replaced = liveSegments(view).filter((seg) => seg.dataset.agent === agent);
      if (!replaced.length) return;
      replaced.forEach((seg) => seg.classList.add("msg-retracted"));
      const note = el("span", "msg-retract-note", t(RETRACT_NOTES[ev.reason] || "Retracted"));
      replaced[replaced.length - 1].after(note);
      view.seg = null;  // what follows starts a segment of its own
      view.afterNote = true;
    },
    approval_requested(ev) { turnView(ev.turn_id); },  // answers.js shows it in the steps
    // A manager decided (or the time ran out) on an action this conversation asked for: the
    // note shows at once; the resumed turn's events follow.
    approval_decided(ev) {
      if (messageEl(ev.message_id)) return;
      const li = el("li", "msg msg-system");
      li.append(el("div", "msg-text", ev.text || ev.summary));
      li.id = "message-" + ev.message_id;
      place(li);
    },
    direct_line(ev) {
      if (!lineBox) return;
      lineBox.hidden = !ev.agent;
      lineBox.dataset.agent = ev.agent || "";
      const label = lineBox.querySelector("[data-direct-label]");
      if (label) label.textContent = agentLabel(ev.agent, ev.label || "");
    },
    consulted(ev) {
      if (!ev.agents.length) return;
      const view = turnView(ev.turn_id);
      const footer = el("div", "msg-consulted", t("Consulted") + ": ");
      ev.agents.forEach((a) => {
        const pill = el("button", "pill" + (a.clarifying ? " pill-ask" : a.success ? "" : " pill-bad"), agentLabel(a.agent, a.label));
        pill.type = "button";
        pill.dataset.agent = a.agent;
        footer.append(pill);
      });
      // "2 agentes · 3 pasos", from the execution rows; for supervisors, a link to the trace.
      const steps = ev.agents.reduce((sum, a) => sum + (a.tools || 0), 0);
      const counted = (n, one, other) => t(n === 1 ? one : other).replace(/\d+/, String(n));
      const text = counted(ev.agents.length, "Agent", "Agents") + " · " + counted(steps, "Step", "Steps");
      const counts = el("span", "msg-counts faint small");
      if (panel.dataset.traceUrl && ev.turn_id) {
        const link = el("a", "", text);
        link.href = panel.dataset.traceUrl + encodeURIComponent(ev.turn_id) + "/";
        link.dataset.traceLink = "";
        counts.append(link);
      } else {
        counts.textContent = text;
      }
      footer.append(" ", counts);
      view.li.append(footer);
    },
    error(ev) {
      if (!ev.turn_id) { refused(ev); return; }
      const view = turnView(ev.turn_id);
      view.thinking.remove();
      // Cut short by a restart: the text says what was done, so it reads as a note, not a failure.
      const cls = ev.code === "interrupted" ? "msg-interrupted" : "msg-error";
      view.problem = el("div", cls, ev.message);
      view.li.append(view.problem);
    },
    completed(ev) {
      const view = turns.get(ev.turn_id);
      turns.delete(ev.turn_id);
      doneTurns.add(ev.turn_id);
      if (messageEl(ev.message_id)) {  // the page already shows this answer
        if (view) view.li.remove();
        return;
      }
      const done = view || turnView(ev.turn_id);
      turns.delete(ev.turn_id);
      done.thinking.remove();
      const shown = liveSegments(done).map((seg) => seg.textContent).join("");
      if (done.problem && done.problem.textContent.trim() === (ev.text || "").trim()) {
        setLiveText(done, "");  // the error already says it; a half-streamed reply is void
      } else if (ev.text && shown.trim() !== ev.text.trim()) {
        setLiveText(done, ev.text);
      }
      if (ev.message_id) done.li.id = "message-" + ev.message_id;
      // Hooks under a finished answer (feedback.js adds its buttons).
      if (ev.message_id) document.dispatchEvent(new CustomEvent("copilot:answer", { detail: { li: done.li, messageId: ev.message_id } }));
      done.li.classList.remove("msg-streaming");
    },
  };

  function handle(ev) {
    if (typeof ev.seq === "number") {
      if (ev.seq <= lastSeq) return;  // already processed (a replay, or a late duplicate)
      lastSeq = ev.seq;
    }
    const handler = handlers[ev.type];
    if (!handler) return;  // usage, reasoning: nothing to draw here
    if (ev.turn_id && ev.type !== "accepted" && doneTurns.has(ev.turn_id)) return;
    const follow = following || nearBottom();
    try {
      handler(ev);
    } catch (err) {  // one bad event must not stop the ones after it
      console.error("copilot: could not render", ev.type, err);
    }
    // The answer's steps, chips and rendered text (answers.js), the side panel and actions (panel.js).
    panel.dispatchEvent(new CustomEvent("copilot:event", { detail: ev }));
    if (follow) scrollDown();
  }

  // --- the connection ------------------------------------------------------------------------

  function showOnline(online) {
    status.textContent = online ? "" : t("Offline");
    status.className = online ? "chat-status" : "chat-status chat-status-offline";
    panel.classList.toggle("is-offline", !online);
  }

  function connect() {
    clearTimeout(reconnectTimer);
    reconnectTimer = null;
    if (socket !== null) return;
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const url = scheme + location.host + "/ws/chat/" + encodeURIComponent(conversationId) + "/?after=" + lastSeq;
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (_) {
      scheduleReconnect();
      return;
    }
    socket = ws;
    ws.onopen = () => {
      if (socket !== ws) return;
      attempt = 0;
      showOnline(true);
      pump();
    };
    ws.onmessage = (e) => {
      if (socket !== ws) return;
      let ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      if (ev && typeof ev.type === "string") handle(ev);
    };
    ws.onclose = () => {
      if (socket !== ws) return;
      socket = null;
      inFlight = null;  // unanswered: the head goes out again on the next open
      showOnline(false);
      scheduleReconnect();
    };
  }

  // Exponential back-off with jitter (half to all of the step), so that a restarted server is
  // not hit by every open tab at the same instant.
  function scheduleReconnect() {
    if (reconnectTimer) return;
    const step = Math.min(BACKOFF_CAP_MS, BACKOFF_FIRST_MS * 2 ** attempt);
    attempt += 1;
    reconnectTimer = setTimeout(connect, step / 2 + Math.random() * step / 2);
  }

  // The browser says the network is back, or the tab is visible again: try now, not at the end
  // of a long back-off.
  function reconnectNow() {
    if (socket !== null) return;
    attempt = 0;
    connect();
  }

  let outbox = readOnly ? [] : loadOutbox().filter(
    (m) => !thread.querySelector('[data-client-id="' + m.client_id + '"]'));  // stored already
  if (!readOnly) {
    saveOutbox();
    outbox.forEach(pendingBubble);
    // The direct line (T2): a footer's agent pill opens it, the indicator's button closes it;
    // both send what the operator could type ("#finanzas", "#salir"), so the turn decides.
    thread.addEventListener("click", (e) => {
      const pill = e.target.closest("button.pill[data-agent]");
      if (pill && pill.dataset.agent) sendText("#" + pill.dataset.agent);
    });
    const close = lineBox && lineBox.querySelector("[data-direct-close]");
    if (close) close.addEventListener("click", () => sendText(close.dataset.exit || "#salir"));
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      submit();
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        submit();
      }
    });
  }
  window.addEventListener("online", reconnectNow);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") reconnectNow();
  });
  window.addEventListener("pageshow", (e) => { if (e.persisted) reconnectNow(); });

  scrollDown();
  connect();
})();
