// Package static embeds the stylesheet, script, icons and the Persian
// typeface; nothing is loaded from anywhere else.
//
// vazirmatn.woff2 is Vazirmatn 33.0.3 (npm package vazirmatn, SIL Open
// Font License 1.1: vazirmatn-OFL.txt), its variable-weight webfont
// subset to Persian/Arabic, Latin and punctuation (81 KB instead of 111):
//
//	pyftsubset 'fonts/webfonts/Vazirmatn[wght].woff2' --layout-features='*' --flavor=woff2 \
//	  --unicodes=U+0020-007E,U+00A0-00FF,U+0131,U+0152-0153,U+02C6,U+02DA,U+02DC,U+0600-06FF,U+200B-200F,U+2010-2027,U+202A-202F,U+2030-203A,U+2066-2069,U+20AC,U+2122,U+2190-2193,U+2212 \
//	  --output-file=vazirmatn.woff2
package static

import "embed"

// FS holds the files served under /static/.
//
//go:embed *.css *.js *.svg *.woff2 *.txt
var FS embed.FS
