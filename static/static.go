// Package static embeds the stylesheet, script and icons; nothing is
// loaded from anywhere else.
package static

import "embed"

// FS holds the files served under /static/.
//
//go:embed *.css *.js *.svg
var FS embed.FS
