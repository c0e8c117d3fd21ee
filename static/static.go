// Package static embeds the stylesheet, script, icons and the Persian
// typeface; nothing is loaded from anywhere else.
//
// vazirmatn.woff2 is Vazirmatn 33.0.3 (npm package vazirmatn, SIL Open
// Font License 1.1: vazirmatn-OFL.txt), its variable-weight webfont
// subset to Persian/Arabic, Latin, punctuation and the few signs the pages
// show (≈ on the dashboard); 82 KB instead of 111:
//
//	pyftsubset 'fonts/webfonts/Vazirmatn[wght].woff2' --layout-features='*' --flavor=woff2 \
//	  --unicodes=U+0020-007E,U+00A0-00FF,U+0131,U+0152-0153,U+02C6,U+02DA,U+02DC,U+0600-06FF,U+200B-200F,U+2010-2027,U+202A-202F,U+2030-203A,U+2066-2069,U+20AC,U+2122,U+2190-2193,U+2212,U+2248,U+2260,U+2264-2265 \
//	  --output-file=vazirmatn.woff2
//
// (Vazirmatn has no arrows: U+2190-2193 select nothing.)
//
// dejavu-sans-mono.woff2 is DejaVu Sans Mono 2.37 (Debian's
// fonts-dejavu-core; Bitstream Vera license, DejaVu changes public domain:
// dejavu-LICENSE.txt), the face of card numbers, ids and codes, subset to
// Latin and punctuation (17 KB):
//
//	pyftsubset /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf --layout-features='*' --flavor=woff2 \
//	  --unicodes=U+0020-007E,U+00A0-00FF,U+2010-2027 --output-file=dejavu-sans-mono.woff2
//
// Both are pyftsubset of Debian's python3-fonttools (4.38). Every page is
// drawn with these two faces only, whatever fonts the machine has
// (web/browsertest: TestPagesUseOnlyShippedFonts), so that screenshots
// are the same on every machine.
package static

import "embed"

// FS holds the files served under /static/.
//
//go:embed *.css *.js *.svg *.woff2 *.txt
var FS embed.FS
