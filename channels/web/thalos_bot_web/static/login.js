// A link from `thalos-bot web pair` carries its code: log in with it at once.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("login");
  const code = document.getElementById("code");
  if (form && code && code.value && !document.querySelector(".error")) {
    form.submit();
  }
});
