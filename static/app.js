// Progressive enhancement only: every page works without this file.
// 1. A submit button marked data-once is disabled after the first submit
//    (the server-side form token is the real guarantee against doubles).
(function () {
  "use strict";
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form.dataset.submitted === "1") {
      ev.preventDefault();
      return;
    }
    form.dataset.submitted = "1";
    var btns = form.querySelectorAll("button[data-once]");
    setTimeout(function () {
      btns.forEach(function (b) {
        b.disabled = true;
        if (b.dataset.busyLabel) { b.textContent = b.dataset.busyLabel; }
      });
    }, 0);
  });
  // Forms restored from the back/forward cache must be usable again.
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) { return; }
    document.querySelectorAll("form[data-submitted]").forEach(function (f) {
      delete f.dataset.submitted;
      f.querySelectorAll("button[data-once]").forEach(function (b) { b.disabled = false; });
    });
  });
  // Move focus to the first error so screen readers announce it.
  var err = document.querySelector("[aria-invalid=true]");
  if (err) { err.focus(); }
})();
