/*
 * The trends form's From and To: a day typed or picked sets the Range select to "custom
 * range" and applies it, as the form's other controls apply theirs (its hx-trigger waits
 * for "days-typed" to settle). The server reads typed days as a custom range by itself, so
 * the form works the same without this script.
 *
 * Only a whole day within the input's min and max is applied: typing a year passes through
 * 0002, 0020 and 0202, which the board would refuse.
 */
(function () {
  "use strict";

  document.addEventListener("change", function (event) {
    const input = event.target;
    if (!input.matches(".range-form input[type=date]") || !input.value || !input.checkValidity()) {
      return;
    }
    input.form.elements.range.value = "custom";
    htmx.trigger(input.form, "days-typed");
  });
})();
