// Progressive enhancement only: every page works without this file.
// 0. A form marked data-autosubmit (the page that sends the payer to a
//    bank reached by POST) is submitted at once; its button does it
//    without script.
(function () {
  "use strict";
  var f = document.querySelector("form[data-autosubmit]");
  if (f) { f.submit(); }
})();

// 1. Submit buttons marked data-once are disabled after the first submit,
//    in every form of the same top-up (same form token: the pay button and
//    the quick picks); data-busy-label replaces the label meanwhile. The
//    server-side form token is the real guarantee against doubles.
(function () {
  "use strict";
  function token(form) {
    var t = form.elements.namedItem("token");
    return t && t.value ? t.value : "";
  }
  // The forms a submit of form stands for: those with its token.
  function group(form) {
    var t = token(form);
    if (!t) { return [form]; }
    return Array.prototype.filter.call(document.forms, function (f) { return token(f) === t; });
  }
  function onceButtons(forms, fn) {
    forms.forEach(function (f) {
      Array.prototype.forEach.call(f.elements, function (b) {
        if (b.tagName === "BUTTON" && b.hasAttribute("data-once")) { fn(b); }
      });
    });
  }
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form.dataset.submitted === "1") {
      ev.preventDefault();
      return;
    }
    var forms = group(form);
    forms.forEach(function (f) { f.dataset.submitted = "1"; });
    // Later: a button disabled now would be left out of the submission.
    setTimeout(function () {
      onceButtons(forms, function (b) {
        b.disabled = true;
        if (b.dataset.busyLabel) {
          if (b.dataset.label === undefined) { b.dataset.label = b.textContent; }
          b.textContent = b.dataset.busyLabel;
        }
      });
    }, 0);
  });
  // Forms restored from the back/forward cache must be usable again, with
  // their own labels.
  window.addEventListener("pageshow", function (ev) {
    if (!ev.persisted) { return; }
    var forms = Array.prototype.slice.call(document.querySelectorAll("form[data-submitted]"));
    forms.forEach(function (f) { delete f.dataset.submitted; });
    onceButtons(forms, function (b) {
      b.disabled = false;
      if (b.dataset.label !== undefined) {
        b.textContent = b.dataset.label;
        delete b.dataset.label;
      }
    });
  });
  // Move focus to the first error so screen readers announce it: the
  // field at fault, else a refusal with no field (made focusable for it).
  var err = document.querySelector("[aria-invalid=true]") || document.querySelector("[role=alert][tabindex='-1']");
  if (err) { err.focus(); }
})();

// 2. The amount field shows the amount as the bank will see it, formatted
//    in the page's digits, while the person types (any digits, separators).
//    It reads what the server reads (internal/money.ParseTomans) and shows
//    nothing for what the server refuses.
(function () {
  "use strict";
  var input = document.getElementById("amount");
  var out = document.getElementById("amount-preview");
  if (!input || !out || !window.Intl) { return; }
  var fmt = new Intl.NumberFormat(out.dataset.locale || "fa-IR");
  // Go's unicode.IsSpace (not \s, which has U+FEFF and lacks U+0085).
  var space = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
  var edges = new RegExp("^" + space.source + "+|" + space.source + "+$", "g");
  // The kind of group separator c is ("" for none): all spaces are one
  // kind, both apostrophes one, each other separator its own.
  function kindOf(c) {
    if (",\u066c\u060c_".indexOf(c) >= 0) { return c; }
    if (c === "'" || c === "\u2019") { return "'"; }
    return space.test(c) ? " " : "";
  }
  // The Latin digits of a whole number of tomans, "" if it is not one.
  // Separators stand only between groups of three digits (a first group of
  // one to three), one kind in a number: "12,5" and "1 5" are refused, not
  // read as 125 and 15. ZWNJ, LRM and RLM are ignored anywhere.
  function digits(s) {
    s = s.replace(/[\u200c\u200e\u200f]/g, "").replace(edges, "").replace(/^\+/, "");
    var r = "", group = 0, kind = "";
    for (var i = 0; i < s.length; i++) {
      var c = s.charCodeAt(i), k;
      if (c >= 0x06F0 && c <= 0x06F9) { r += String(c - 0x06F0); }
      else if (c >= 0x0660 && c <= 0x0669) { r += String(c - 0x0660); }
      else if (c >= 48 && c <= 57) { r += s[i]; }
      else {
        k = kindOf(s[i]);
        if (!k || group === 0 || (kind ? group !== 3 || k !== kind : group > 3)) { return ""; }
        kind = k;
        group = 0;
        continue;
      }
      group++;
      if (kind && group > 3) { return ""; }
    }
    return kind && group !== 3 ? "" : r;
  }
  function update() {
    var d = digits(input.value).replace(/^0+/, "");
    out.textContent = d && d.length <= 15 ? fmt.format(Number(d)) + " " + out.dataset.unit : "";
  }
  // In the Persian page, digits typed in Latin or Arabic-Indic show as
  // Persian digits (one character for one: the caret stays where it was).
  function persianDigits() {
    if (input.dataset.digits !== "fa") { return; }
    var v = input.value;
    var p = v.replace(/[0-9\u0660-\u0669]/g, function (c) {
      var n = c.charCodeAt(0);
      return String.fromCharCode(0x06F0 + (n >= 0x0660 ? n - 0x0660 : n - 48));
    });
    if (p !== v) {
      var a = input.selectionStart, b = input.selectionEnd;
      input.value = p;
      try { input.setSelectionRange(a, b); } catch (e) { /* not focused */ }
    }
  }
  input.addEventListener("input", function () { persianDigits(); update(); });
  // Quick picks fill the field (their link is for browsers without
  // JavaScript) and leave the person on the form, ready to pay.
  Array.prototype.forEach.call(document.querySelectorAll("a.chip[data-amount]"), function (chip) {
    chip.addEventListener("click", function (ev) {
      ev.preventDefault();
      input.value = chip.dataset.amount;
      input.removeAttribute("aria-invalid");
      update();
      input.focus();
    });
  });
  persianDigits();
  update();
})();

// 3. A page that waits for news (a payment being confirmed, the admin's
//    list) names a URL to check and how often (data-refresh-url and
//    data-refresh-seconds on <body>; without JavaScript a <noscript> meta
//    refresh reloads it). The URL is fetched in the background and the page
//    is reloaded only when what its [data-refresh-watch] elements say has
//    changed: no reload under the reader every few seconds.
(function () {
  "use strict";
  var url = document.body.dataset.refreshUrl;
  var seconds = parseInt(document.body.dataset.refreshSeconds, 10);
  if (!url || !(seconds > 0) || !window.fetch || !window.DOMParser) { return; }
  function watched(doc) {
    return Array.prototype.map.call(doc.querySelectorAll("[data-refresh-watch]"), function (el) {
      return el.textContent.replace(/\s+/g, " ").trim();
    }).join("\n");
  }
  var now = watched(document);
  function check() {
    fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        if (watched(doc) !== now) {
          window.location.replace(url);
          return;
        }
        setTimeout(check, seconds * 1000);
      })
      .catch(function () { setTimeout(check, seconds * 1000); });
  }
  setTimeout(check, seconds * 1000);
})();

// 4. Copy buttons (receipt: the payment reference, the bank's reference)
//    copy their target's text; "print" prints the receipt. Both are hidden
//    without JavaScript.
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("[data-copy]"), function (btn) {
    var target = document.getElementById(btn.dataset.copy);
    if (!target) { return; }
    btn.hidden = false;
    btn.addEventListener("click", function () {
      var text = btn.dataset.copyText || target.textContent.trim();
      var label = btn.dataset.label || btn.textContent;
      btn.dataset.label = label;
      function done() {
        btn.textContent = btn.dataset.copiedLabel || label;
        setTimeout(function () { btn.textContent = label; }, 2000);
      }
      function fallback() {
        var range = document.createRange();
        range.selectNodeContents(target);
        var sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        try { document.execCommand("copy"); } catch (e) { /* the text stays selected */ }
        done();
      }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, fallback);
      } else {
        fallback();
      }
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("[data-print]"), function (btn) {
    btn.hidden = false;
    btn.addEventListener("click", function () { window.print(); });
  });
})();

// 5. On a phone the header's links fold behind a menu button (CSS shows
//    the button only on narrow screens of a scripted page; without
//    JavaScript the links stay in view).
(function () {
  "use strict";
  var btn = document.querySelector("[data-menu-toggle]");
  if (!btn) { return; }
  var nav = document.getElementById(btn.getAttribute("aria-controls"));
  if (!nav) { return; }
  btn.addEventListener("click", function () {
    var open = nav.classList.toggle("open");
    btn.setAttribute("aria-expanded", open ? "true" : "false");
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape" && nav.classList.contains("open")) {
      nav.classList.remove("open");
      btn.setAttribute("aria-expanded", "false");
      btn.focus();
    }
  });
})();

// 6. A checkout just paid or canceled goes on to the merchant's page: its
//    return link, marked data-autofollow, is followed at once (without
//    JavaScript the payer clicks it). A form's POST may not redirect to
//    another site (form-action); a page may go there.
(function () {
  "use strict";
  var a = document.querySelector("a[data-autofollow]");
  if (a && a.href) { window.location.replace(a.href); }
})();
