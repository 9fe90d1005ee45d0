/*
 * The ledger's bulk bar: "select all on this page" checks every row's box, a row's box
 * keeps it in step (checked, unchecked or mixed), and the bar says how many are selected.
 * Without this script the form still works: the server reads the page's rows itself when
 * "select all" is checked.
 */
(function () {
  "use strict";

  function picks() {
    return Array.from(document.querySelectorAll("input[data-pick]"));
  }

  function update() {
    const all = document.querySelector("input[data-select-page]");
    const count = document.getElementById("bulk-count");
    const boxes = picks();
    const chosen = boxes.filter(function (box) { return box.checked; }).length;
    if (all) {
      all.checked = boxes.length > 0 && chosen === boxes.length;
      all.indeterminate = chosen > 0 && chosen < boxes.length;
    }
    if (count) {
      count.textContent = chosen === 1 ? "1 entry selected." : chosen + " entries selected.";
    }
  }

  document.addEventListener("change", function (event) {
    const box = event.target;
    if (box.matches("input[data-select-page]")) {
      picks().forEach(function (pick) { pick.checked = box.checked; });
    }
    if (box.matches("input[data-select-page], input[data-pick]")) {
      update();
    }
  });

  // The rows change under a filter or an action in a row: the selection follows them.
  document.addEventListener("htmx:afterSettle", update);
  document.addEventListener("DOMContentLoaded", update);
})();
