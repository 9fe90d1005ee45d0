/*
 * Focus and announcements after an htmx swap, so a keyboard or screen-reader user is not
 * dropped back to <body>:
 *  - the swapped content's [data-focus] element takes the focus: a form hands it to its first
 *    field, anything else (a changed row, a notice) is focused itself;
 *  - the text of its [data-announce] elements is said in the page's live region (#live).
 */
(function () {
  "use strict";

  const FIELDS = "input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled]), button:not([disabled])";

  function focusTarget(marked) {
    if (marked.tagName === "FORM") {
      return marked.querySelector(FIELDS) || marked;
    }
    return marked;
  }

  function marked(root, selector) {
    const found = Array.from(root.querySelectorAll(selector));
    return root.matches && root.matches(selector) ? [root].concat(found) : found;
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    // An outerHTML swap replaces the target: the new content is what now has its id.
    let root = event.detail.elt;
    if (!root.isConnected && root.id) {
      root = document.getElementById(root.id);
    }
    if (!root) {
      return;
    }
    const focus = marked(root, "[data-focus]")[0];
    if (focus) {
      const target = focusTarget(focus);
      if (!target.matches(FIELDS) && !target.hasAttribute("tabindex")) {
        target.setAttribute("tabindex", "-1");
      }
      target.focus({ preventScroll: true });
      target.scrollIntoView({ block: "nearest" });
    }
    const live = document.getElementById("live");
    const said = marked(root, "[data-announce]").map(function (el) { return el.textContent.trim(); });
    if (live && said.length) {
      live.textContent = said.join(" ");
    }
  });
})();
