// mnemolog dashboard: progressive touches only; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // A filter (a select, the as-of slider) submits its form when it changes.
  for (const input of document.querySelectorAll("[data-autosubmit]")) {
    input.addEventListener("change", () => input.form.requestSubmit());
  }
});
