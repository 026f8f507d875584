// Try an utterance from the agent's admin page (D1): the whole form — unsaved edits included —
// goes to the dry run with the text; the result replaces the box's output. Nothing is saved.
(() => {
  const box = document.getElementById("try-utterance");
  if (!box) return;
  const form = box.closest("form");
  const input = document.getElementById("try-utterance-text");
  const out = document.getElementById("try-utterance-out");
  const go = document.getElementById("try-utterance-go");
  async function run() {
    if (!input.value.trim()) return;
    const data = new FormData(form);
    data.set("text", input.value);
    data.set("with_edits", "1");
    // The name is read-only once the agent exists: the page still speaks for that agent.
    if (!data.get("name") && box.dataset.agent) data.set("name", box.dataset.agent);
    go.disabled = true;
    try {
      const response = await fetch(box.dataset.url, {
        method: "POST", body: data, headers: { "HX-Request": "true" }, credentials: "same-origin",
      });
      out.innerHTML = await response.text();
    } catch (error) {
      out.textContent = String(error);
    } finally {
      go.disabled = false;
    }
  }
  go.addEventListener("click", run);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); run(); }  // Enter tries, it never saves the form
  });
})();
