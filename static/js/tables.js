// A table wider than its card scrolls inside it (.table-wrap); such a region must be reachable
// by keyboard to scroll it (axe: scrollable-region-focusable). Only the ones that really scroll
// get a Tab stop and a name, re-checked when the window changes size or htmx swaps content.
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll(".table-wrap").forEach((wrap) => {
      const scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
      if (scrolls) {
        wrap.tabIndex = 0;
        wrap.setAttribute("role", "region");
        const section = wrap.closest(".card, section");
        const caption = wrap.querySelector("caption") || (section && section.querySelector("h1, h2, h3")) || wrap.querySelector("th");
        if (!wrap.hasAttribute("aria-label") && caption) wrap.setAttribute("aria-label", caption.textContent.trim());
      } else if (wrap.tabIndex === 0) {
        wrap.removeAttribute("tabindex");
        wrap.removeAttribute("role");
      }
    });
  }
  document.addEventListener("DOMContentLoaded", mark);
  document.addEventListener("htmx:afterSettle", mark);
  window.addEventListener("resize", mark);
})();
