/*
 * Focus and announcements after an htmx swap, so a keyboard or screen-reader user is not
 * dropped back to <body>:
 *  - the swapped content's [data-focus] element takes the focus: a form hands it to its first
 *    field, anything else (a changed row, a notice) is focused itself;
 *  - without one, when the swap took away the focused element (htmx itself keeps the focus
 *    on an element whose id comes back), a pager's link is found again in the new content;
 *    failing that, the swapped content itself takes the focus;
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

  function focusOn(target) {
    if (!target.matches(FIELDS) && !target.matches("a[href]") && !target.hasAttribute("tabindex")) {
      target.setAttribute("tabindex", "-1");
    }
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "nearest" });
  }

  function foundAgain(was, root) {
    // A pager's link: the same one again, or on the last (first) page the other one.
    const rel = was.getAttribute("rel");
    const pager = rel === "next" || rel === "prev";
    return (pager && (root.querySelector("a[rel='" + rel + "']") ||
                      root.querySelector("a[rel='next'], a[rel='prev']"))) || root;
  }

  function lost() {
    return !document.activeElement || document.activeElement === document.body;
  }

  // The element that had the focus when a swap began.
  let before = null;
  document.addEventListener("htmx:beforeSwap", function () {
    before = document.activeElement;
  });

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
      focusOn(focusTarget(focus));
    } else if (before && !before.isConnected && lost()) {
      focusOn(foundAgain(before, root));
    }
    const live = document.getElementById("live");
    const said = marked(root, "[data-announce]").map(function (el) { return el.textContent.trim(); });
    if (live && said.length) {
      live.textContent = said.join(" ");
    }
  });
})();
