// The bank's pages' script; every page works without it.
//
// A page the browser restores from its back-forward cache (Back after
// paying) is loaded again, so that it shows the payment as it is now: a
// finished payment's page, never a live Pay button and a running timer.
window.addEventListener("pageshow", function (e) {
  "use strict";
  if (e.persisted) { window.location.reload(); }
});

// The page that returns the payer to the merchant by POST (SEP, Mellat)
// submits its one form at once; without script its button does. Before it
// posts, its history entry becomes the payment's own page (data-replace),
// so that Back from the merchant shows the finished payment and never
// posts to the merchant again.
(function () {
  "use strict";
  var back = document.querySelector("form[data-autosubmit]");
  if (!back) { return; }
  var page = back.getAttribute("data-replace");
  if (page && window.history && window.history.replaceState) {
    try { window.history.replaceState(null, "", page); } catch (err) { /* keep the address */ }
  }
  back.submit();
})();

// The payment page's countdown: the time left to pay, every second, in the
// page's digits; at zero the page is loaded again and the bank says the
// payment has expired. Without this script the page shows the time left
// when it was loaded.
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
