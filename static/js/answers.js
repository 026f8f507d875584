// Answers in the panel (copilot/answers.py): while a turn runs, its agents and tool calls fill
// one "what I did" block from the typed events (each tool_result carries its `line`, already in
// the turn's language); when it completes, the answer the page would render — Markdown, record
// chips, steps, alert — is fetched (templates/copilot/_answer.html) and put in place of what was
// streamed, so the live view and a reload show the same HTML. copilot.js hands every event it
// processes to this file as a `copilot:event` DOM event on the panel.
//
// Also here: the active conversation's title follows its first message (the `accepted` event
// carries it), and Esc closes the open expander or dialog the focus is in.
(function () {
  "use strict";
  const panel = document.getElementById("copilot-panel");
  const boot = document.getElementById("answers-live");

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Esc: close the innermost open <dialog> or <details> around the focus (or the last opened).
  document.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || e.defaultPrevented) return;
    const active = document.activeElement;
    const dialog = document.querySelector("dialog[open]");
    if (dialog) { dialog.close(); return; }
    const open = (active && active.closest && active.closest("details[open]")) ||
      Array.from(document.querySelectorAll("details[open].consult-pick, details[open][data-steps]")).pop();
    if (!open) return;
    open.open = false;
    const summary = open.querySelector("summary");
    if (summary) summary.focus();
    e.preventDefault();
  });

  if (!panel || !boot) return;
  const t = (key) => boot.dataset["i18n" + key] || key;
  const labelsNode = document.getElementById("agent-labels");
  const LABELS = labelsNode ? JSON.parse(labelsNode.textContent || "{}") : {};
  const views = new Map();  // turn_id → { block, list, agents: [] }

  function turnLi(turnId) {
    return document.querySelector('#chat-thread .msg-assistant[data-turn="' + CSS.escape(turnId) + '"]');
  }

  function liveBlock(turnId) {
    let view = views.get(turnId);
    const li = turnLi(turnId);
    if (!li) return null;
    if (view && view.block.isConnected) return view;
    const block = el("details", "steps steps-live");
    block.dataset.steps = "";
    block.dataset.live = "";
    block.open = true;
    const summary = el("summary");
    summary.append(el("span", "steps-title", t("What")));
    const list = el("ol", "steps-list");
    block.append(summary, list);
    const text = li.querySelector(".msg-text");
    if (text) text.after(block); else li.append(block);
    view = { block: block, list: list, agents: [] };
    views.set(turnId, view);
    return view;
  }

  function agentItem(view, ev) {
    for (let i = view.agents.length - 1; i >= 0; i--) {
      if (view.agents[i].agent === (ev.agent || "")) return view.agents[i];
    }
    return addAgent(view, ev);
  }

  function addAgent(view, ev) {
    const item = el("li", "step step-running");
    const head = el("div", "step-head");
    head.append(el("span", "step-icon"), el("span", "step-label", LABELS[ev.agent] || ev.label || ev.agent || ""));
    const tools = el("ul", "step-tools");
    item.append(head, tools);
    view.list.append(item);
    const entry = { agent: ev.agent || "", intent: ev.intent || "", item: item, tools: tools, rows: [] };
    view.agents.push(entry);
    return entry;
  }

  function lastRow(entry, tool) {
    for (let i = entry.rows.length - 1; i >= 0; i--) {
      if (entry.rows[i].dataset.tool === tool) return entry.rows[i];
    }
    return null;
  }

  function ended(entry, ev) {
    entry.item.classList.remove("step-running");
    entry.item.classList.add(STATUS(ev));
  }

  function toolRow(entry, ev) {
    const row = el("li", "step-tool tool-running");
    row.dataset.tool = ev.tool;
    row.append(el("span", "step-icon"), el("span", "step-line", " " + t("Working")));
    entry.tools.append(row);
    entry.rows.push(row);
    return row;
  }

  const STATUS = (ev) => ev.clarifying ? "step-ask" : ev.yielded ? "step-muted" : ev.success ? "step-ok" : "step-bad";

  const live = {
    // A step's start usually carries its end (the log folds the pair): then it is drawn done.
    agent_start(ev) {
      const view = liveBlock(ev.turn_id);
      if (!view) return;
      // The live start came first (unsequenced): its logged copy, folded with the end, ends it.
      const name = ev.agent || "";
      const running = view.agents.find((a) => a.agent === name && a.item.classList.contains("step-running"));
      const entry = running || addAgent(view, ev);
      if ("success" in ev) ended(entry, ev);
    },
    agent_end(ev) {
      const view = liveBlock(ev.turn_id);
      if (view) ended(agentItem(view, ev), ev);
    },
    tool_start(ev) {
      const view = liveBlock(ev.turn_id);
      if (view) toolRow(agentItem(view, ev), ev);
    },
    // Usually the call's only event (its start and end folded in): a row of its own then.
    tool_result(ev) {
      const view = liveBlock(ev.turn_id);
      if (!view) return;
      const entry = agentItem(view, ev);
      const running = lastRow(entry, ev.tool);
      const row = running && running.classList.contains("tool-running") ? running : toolRow(entry, ev);
      row.classList.remove("tool-running");
      row.classList.add(ev.ok ? "tool-ok" : "tool-bad");
      const line = row.querySelector(".step-line");
      if (line && ev.line) line.textContent = " " + ev.line;
    },
    approval_requested(ev) {
      const view = liveBlock(ev.turn_id);
      if (!view) return;
      const row = el("li", "step-tool tool-held");
      row.append(el("span", "step-icon"), " " + t("Held") + " (#" + ev.approval_id + ")" + (ev.summary ? ": " + ev.summary : ""));
      agentItem(view, ev).tools.append(row);
    },
    accepted(ev) {
      if (!ev.title) return;
      const current = document.querySelector('.chat-list a[aria-current="page"] .chat-title');
      if (current && current.textContent.trim() === t("NewTitle")) current.textContent = ev.title;
    },
    completed(ev) {
      views.delete(ev.turn_id);
      if (!ev.message_id) return;
      const url = boot.dataset.answerUrl.replace("TURN", encodeURIComponent(ev.turn_id));
      fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } })
        .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
        .then((html) => { swap(ev, html); followOnPage(); })
        .catch(() => { /* the streamed text stays; a reload shows the rendered answer */ });
    },
  };

  // The rendered answer in place of what was streamed (text, live steps, notes): what a reload shows.
  function swap(ev, html) {
    const li = document.getElementById("message-" + ev.message_id) || turnLi(ev.turn_id);
    if (!li) return;
    const box = document.createElement("div");
    box.innerHTML = html;
    li.querySelectorAll(".answer, .msg-text, .msg-thinking, .steps-live, .msg-approval, .msg-error, .msg-interrupted, .msg-retract-note")
      .forEach((node) => node.remove());
    li.prepend(...Array.from(box.childNodes));
  }

  // On a phone the page scrolls, not the thread (answers.css): follow new content there too.
  const thread = document.getElementById("chat-thread");
  function followOnPage() {
    if (!thread || getComputedStyle(thread).overflowY !== "visible") return;
    const gap = document.documentElement.scrollHeight - window.scrollY - window.innerHeight;
    if (gap < 240) window.scrollTo(0, document.documentElement.scrollHeight);
  }

  panel.addEventListener("copilot:event", (e) => {
    const ev = e.detail;
    if (ev && (ev.type === "text" || ev.type === "accepted" || ev.type === "completed")) {
      requestAnimationFrame(followOnPage);
    }
    const handler = ev && live[ev.type];
    if (!handler) return;
    try { handler(ev); } catch (err) { console.error("answers: could not render", ev.type, err); }
  });
})();
