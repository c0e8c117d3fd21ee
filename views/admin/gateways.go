package admin

import "time"

// GatewaysView is the admin's gateways page: each gateway's switch,
// breaker and latency.
type GatewaysView struct {
	Notice   string // message key of the last action's result
	Gateways []GatewayRow
}

// GatewayRow is one gateway on the admin's gateways page.
type GatewayRow struct {
	Name  string // the driver's name
	Label string
	// Off: an operator switched it off for new top-ups.
	Off bool
	// Breaker: its circuit breaker in this instance.
	BreakerState        string
	Requests, Failures  uint32
	ConsecutiveFailures uint32
	Since               time.Time
	// Latency per operation over the last hour.
	Latency []LatencyView
}

// boolAttr is a data attribute's text of a flag.
func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
