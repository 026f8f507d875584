// The Django admin for screen readers (issue 28: axe-core serious findings on its own widgets).
// - A field edited in a change list's row has no <label>: it is named by its column and row.
// - The autocomplete boxes (select2) are named by their field's label.
// - The filter boxes' help icons carry an aria-label with no role: they are images.
// - A box that scrolls sideways is reachable by the keyboard.
// Run on load and again for whatever the admin adds later (inline rows, select2 boxes).
(function () {
  "use strict";

  function text(node) {
    return node ? node.textContent.replace(/\s+/g, " ").trim() : "";
  }

  function nameListFields(root) {
    const table = document.getElementById("result_list");
    if (!table) return;
    const heads = Array.from(table.querySelectorAll("thead th")).map(text);
    table.querySelectorAll("tbody tr").forEach((row) => {
      const cells = Array.from(row.children);
      const title = text(row.querySelector("th"));
      cells.forEach((cell, index) => {
        cell.querySelectorAll("input:not([type=hidden]), select, textarea").forEach((field) => {
          if (field.labels && field.labels.length) return;
          if (field.hasAttribute("aria-label") || field.classList.contains("action-select")) return;
          field.setAttribute("aria-label", [heads[index], title].filter(Boolean).join(": "));
        });
      });
    });
  }

  function nameAutocompletes(root) {
    root.querySelectorAll(".select2-selection[aria-labelledby]").forEach((box) => {
      const container = box.closest(".select2-container");
      const select = container && container.previousElementSibling;
      const label = select && select.id ? document.querySelector('label[for="' + select.id + '"]') : null;
      if (!label) return;
      if (!label.id) label.id = select.id + "-label";
      const rendered = box.querySelector(".select2-selection__rendered");
      if (rendered) rendered.setAttribute("aria-labelledby", label.id);
      box.setAttribute("aria-labelledby", label.id + (rendered && rendered.id ? " " + rendered.id : ""));
    });
  }

  function iconsAreImages(root) {
    root.querySelectorAll(".help-tooltip[aria-label]:not([role])").forEach((icon) => {
      icon.setAttribute("role", "img");
    });
  }

  // A box that scrolls sideways at this width (an inline's table on a phone) with nothing to
  // focus inside: the keyboard reaches it, so it can be scrolled without a mouse.
  function scrollersReachable(root) {
    root.querySelectorAll(".wrapper, .tabular, .results").forEach((box) => {
      const scrolls = /(auto|scroll)/.test(getComputedStyle(box).overflowX) &&
        box.scrollWidth > box.clientWidth;
      const focusable = box.querySelector("a[href], button, input, select, textarea, [tabindex]");
      if (scrolls && !focusable && !box.hasAttribute("tabindex")) {
        box.tabIndex = 0;
        const heading = box.closest(".inline-group, .module");
        const name = heading ? text(heading.querySelector("h2, caption")) : "";
        if (name) box.setAttribute("aria-label", name);
      }
    });
  }

  function mend(root) {
    nameListFields(root);
    nameAutocompletes(root);
    iconsAreImages(root);
    scrollersReachable(root);
  }

  function start() {
    mend(document);
    let queued = false;
    new MutationObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => { queued = false; mend(document); });
    }).observe(document.body, { childList: true, subtree: true });
    window.addEventListener("resize", () => scrollersReachable(document));
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
