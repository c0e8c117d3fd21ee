package i18n

import (
	"strings"
	"time"
)

// ShortRef is a payment's reference as people read, say and type it: the
// first 12 characters of its public id (60 random bits), upper case, in
// groups of four ("JIWF-NQZH-KKEU"). The full id stays in the page's URL.
func ShortRef(publicID string) string {
	id := strings.ToUpper(publicID)
	if len(id) > 12 {
		id = id[:12]
	}
	var b strings.Builder
	for i := 0; i < len(id); i += 4 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(id[i:min(i+4, len(id))])
	}
	return b.String()
}

// TehranClock is t's wall-clock time in Tehran ("14:05:09").
func TehranClock(t time.Time) string { return t.In(tehran()).Format("15:04:05") }
