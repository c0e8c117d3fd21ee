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

// 2. The amount field shows the amount as the bank will see it, formatted
//    in the page's digits, while the person types (any digits, separators).
(function () {
  "use strict";
  var input = document.getElementById("amount");
  var out = document.getElementById("amount-preview");
  if (!input || !out || !window.Intl) { return; }
  var fmt = new Intl.NumberFormat(out.dataset.locale || "fa-IR");
  function digits(s) {
    var r = "";
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i);
      if (c >= 0x06F0 && c <= 0x06F9) { r += String(c - 0x06F0); }
      else if (c >= 0x0660 && c <= 0x0669) { r += String(c - 0x0660); }
      else if (c >= 48 && c <= 57) { r += s[i]; }
      else if (",٬، _'".indexOf(s[i]) < 0 && !/\s/.test(s[i])) { return ""; }
    }
    return r;
  }
  function update() {
    var d = digits(input.value.trim()).replace(/^0+/, "");
    out.textContent = d && d.length <= 15 ? fmt.format(Number(d)) + " " + out.dataset.unit : "";
  }
  input.addEventListener("input", update);
  update();
})();
