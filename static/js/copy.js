/*
 * Copy buttons: a <button data-copy="ID"> copies the text of the element #ID to the
 * clipboard and says so in its status (#ID-status), for screen readers too.
 */
(function () {
  "use strict";

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button) {
      return;
    }
    const source = document.getElementById(button.dataset.copy);
    const status = document.getElementById(button.dataset.copy + "-status");
    const text = source ? (source.value || source.textContent).trim() : "";
    const say = function (message) {
      if (status) {
        status.textContent = message;
      }
    };
    if (!navigator.clipboard) {
      say("Select the text and copy it: this browser gives no clipboard here.");
      return;
    }
    navigator.clipboard.writeText(text).then(
      function () { say("Copied."); },
      function () { say("Could not copy: select the text and copy it."); }
    );
  });
})();
