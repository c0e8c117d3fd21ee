// Package browsertest drives Kifpool in a real browser (Debian's chromium
// through chromedp): the top-up flow end to end against the sandbox bank,
// the JavaScript enhancements, both languages, a phone viewport and an
// axe-core accessibility audit of every main page. TestScreenshots
// (make screenshots) renders the main pages to PNGs for review.
//
// The tests skip when chromium or axe-core is missing, unless
// REQUIRE_BROWSER=1 (CI), which turns that into a failure. CHROMIUM
// overrides the browser (default /usr/bin/chromium), AXE_CORE_JS the
// axe-core script (default .ci/axe/node_modules/axe-core/axe.min.js), and
// BROWSER_ARTIFACTS the folder of failure screenshots.
package browsertest
