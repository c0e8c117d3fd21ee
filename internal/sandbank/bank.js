// The payment page's countdown: the time left to pay, every second, in the
// page's digits; at zero the page is loaded again and the bank says the
// payment has expired. Without this script the page shows the time left
// when it was loaded.
// The page that returns the payer to the merchant by POST (SEP, Mellat)
// submits its one form at once; without script its button does.
(function () {
  "use strict";
  var back = document.querySelector("form[data-autosubmit]");
  if (back) { back.submit(); }
})();

(function () {
  "use strict";
  var box = document.querySelector("[data-seconds-left]");
  var out = box && box.querySelector("[data-countdown]");
  if (!out) { return; }
  var left = parseInt(box.getAttribute("data-seconds-left"), 10);
  if (!(left >= 0)) { return; }
  var fa = box.getAttribute("data-digits") === "fa";
  var end = Date.now() + left * 1000;
  function digits(s) {
    return fa ? s.replace(/[0-9]/g, function (d) { return String.fromCharCode(0x06F0 + d.charCodeAt(0) - 48); }) : s;
  }
  function tick() {
    var s = Math.max(0, Math.ceil((end - Date.now()) / 1000));
    var m = Math.floor(s / 60), r = s % 60;
    out.textContent = digits(m + ":" + (r < 10 ? "0" : "") + r);
    if (s === 0) {
      setTimeout(function () { window.location.reload(); }, 1000);
      return;
    }
    setTimeout(tick, 1000 - ((end - Date.now()) % 1000 + 1000) % 1000 || 1000);
  }
  tick();
})();
