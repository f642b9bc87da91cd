// mnemolog dashboard: progressive touches only; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // A filter's select submits its form when it changes.
  for (const select of document.querySelectorAll("select[data-autosubmit]")) {
    select.addEventListener("change", () => select.form.requestSubmit());
  }
});
