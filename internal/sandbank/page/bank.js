// The bank's pages' script; every page works without it.
//
// A page the browser restores from its back-forward cache (Back after
// paying) is loaded again, so that it shows the payment as it is now: a
// finished payment's page, never a live Pay button and a running timer.
window.addEventListener("pageshow", function (e) {
  "use strict";
  if (e.persisted) { window.location.reload(); }
});

// A page reached by POST (SEP's and Mellat's payment page, posted by the
// merchant) and the page that posts the payer back to the merchant name
// the payment page's GET address (data-address): it becomes their
// history entry, so that reload and Back load the payment as it is now
// and never post again ("Confirm Form Resubmission", a second post to
// the merchant).
(function () {
  "use strict";
  var page = document.body && document.body.getAttribute("data-address");
  if (page && window.history && window.history.replaceState) {
    try { window.history.replaceState(null, "", page); } catch (err) { /* keep the address */ }
  }
})();

// The page that returns the payer to the merchant by POST (SEP, Mellat)
// submits its one form at once; without script its button does.
(function () {
  "use strict";
  var back = document.querySelector("form[data-autosubmit]");
  if (back) { back.submit(); }
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
