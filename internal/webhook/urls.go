package webhook

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
)

// Errors of the URL checks (pages and the API translate them).
var (
	ErrURLInvalid   = errors.New("webhook: not an absolute http(s) URL without user info")
	ErrURLScheme    = errors.New("webhook: the URL must be https (http only to loopback, in development)")
	ErrURLPrivate   = errors.New("webhook: the URL points into a private, loopback or link-local network")
	ErrOriginFormat = errors.New("webhook: an origin is scheme://host[:port] with nothing after it")
	// ErrReturnURLNotAllowed: a return_url whose origin its owner did not
	// register (or that is no clean absolute URL).
	ErrReturnURLNotAllowed = errors.New("webhook: return_url origin not registered")
)

const maxURLLen = 2048

// clean reports whether raw is free of what browsers and parsers read
// differently: spaces, control characters, backslashes (a browser reads
// "https://good\@evil" as a path on evil).
func clean(raw string) bool {
	if raw == "" || len(raw) > maxURLLen {
		return false
	}
	for _, r := range raw {
		if r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII {
			return false
		}
	}
	return true
}

// parseAbsolute parses an absolute http(s) URL with a host and no user
// info, and returns it with its canonical origin.
func parseAbsolute(raw string) (*url.URL, string, error) {
	if !clean(raw) {
		return nil, "", ErrURLInvalid
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" || strings.Contains(u.Host, "@") {
		return nil, "", ErrURLInvalid
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		return nil, "", ErrURLScheme
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || strings.HasSuffix(host, ".") {
		return nil, "", ErrURLInvalid
	}
	port := u.Port()
	if port != "" {
		for _, c := range port {
			if c < '0' || c > '9' {
				return nil, "", ErrURLInvalid
			}
		}
		port = strings.TrimLeft(port, "0")
		if port == "" {
			return nil, "", ErrURLInvalid
		}
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	h := host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	origin := scheme + "://" + h
	if port != "" {
		origin += ":" + port
	}
	return u, origin, nil
}

// loopbackHost reports whether host (without brackets) is loopback by its
// spelling: localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// checkTarget applies the scheme and network rules to a parsed URL: https,
// or http to loopback when allowLoopback; an address literal must be
// public (loopback only when allowed). Names are checked again when
// dialled (Client), against what they resolve to then.
func checkTarget(u *url.URL, allowLoopback bool) error {
	host := strings.ToLower(u.Hostname())
	loop := loopbackHost(host)
	if loop && !allowLoopback {
		return ErrURLPrivate
	}
	if strings.ToLower(u.Scheme) == "http" && !loop {
		return ErrURLScheme
	}
	if ip, err := netip.ParseAddr(host); err == nil && blocked(ip, allowLoopback) {
		return ErrURLPrivate
	}
	return nil
}

// CheckEndpointURL checks a webhook URL as registered: absolute, no user
// info, https (http only to loopback with allowLoopback), not an address
// in a private network. It returns the URL as it will be called.
func CheckEndpointURL(raw string, allowLoopback bool) (string, error) {
	u, _, err := parseAbsolute(strings.TrimSpace(raw))
	if err != nil {
		return "", err
	}
	if err := checkTarget(u, allowLoopback); err != nil {
		return "", err
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// CanonicalOrigin parses a return origin as registered
// ("https://shop.example", "http://127.0.0.1:8080" in development): no
// path, query, fragment or user info; the same scheme rules as endpoints.
// It returns the canonical form compared with return URLs.
func CanonicalOrigin(raw string, allowLoopback bool) (string, error) {
	raw = strings.TrimSuffix(strings.TrimSpace(raw), "/")
	u, origin, err := parseAbsolute(raw)
	if err != nil {
		return "", ErrOriginFormat
	}
	if u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", ErrOriginFormat
	}
	if err := checkTarget(u, allowLoopback); err != nil {
		return "", err
	}
	return origin, nil
}

// sameEndpointURL reports whether two endpoint URLs name the same
// receiver: equal once the scheme and host are in lower case, a port's
// leading zeros and a default port are dropped, the path and query are
// decoded and escaped again in one way (%6b is k), an empty path is "/"
// and a fragment is ignored.
func sameEndpointURL(a, b string) bool {
	ca, okA := canonicalEndpoint(a)
	cb, okB := canonicalEndpoint(b)
	return okA && okB && ca == cb
}

func canonicalEndpoint(raw string) (string, bool) {
	u, origin, err := parseAbsolute(raw)
	if err != nil {
		return "", false
	}
	path := (&url.URL{Path: u.Path}).EscapedPath()
	if path == "" {
		path = "/"
	}
	out := origin + path
	if u.RawQuery != "" {
		if q, err := url.ParseQuery(u.RawQuery); err == nil {
			out += "?" + q.Encode()
		} else {
			out += "?" + u.RawQuery
		}
	}
	return out, true
}

// noteURL is an endpoint's URL as the audit log keeps it: scheme, host
// and path, without user info, query or fragment. A partner's query may
// hold its own secret (failed deliveries drop the URL for that reason),
// and the audit log is append-only.
func noteURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a stored endpoint's (those are checked URLs): nothing of it.
		return "(URL not shown)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// ReturnTarget is where the payer goes after the bank: u with topup_id
// and status set in its query (replacing any of those names).
func ReturnTarget(returnURL, topUpID, status string) (string, error) {
	return ReturnWith(returnURL, "topup_id", topUpID, status)
}

// ReturnWith is returnURL with idName=id and status=status added to its
// query, after whatever pairs of those names it had are taken out. The
// partner's own pairs stay exactly as registered, in their order: not
// decoded and encoded again, which would drop a pair Go's parser refuses
// (a ';', a bad escape) and break a partner who signs its query.
func ReturnWith(returnURL, idName, id, status string) (string, error) {
	u, err := url.Parse(returnURL)
	if err != nil {
		return "", err
	}
	var kept []string
	for _, pair := range strings.Split(u.RawQuery, "&") {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if pair == "" || key == idName || key == "status" {
			continue
		}
		kept = append(kept, pair)
	}
	kept = append(kept, idName+"="+url.QueryEscape(id), "status="+url.QueryEscape(status))
	u.RawQuery = strings.Join(kept, "&")
	return u.String(), nil
}

var extraBlocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed a private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: may embed a private IPv4
	netip.MustParsePrefix("::/96"),           // IPv4-compatible ([::127.0.0.1], deprecated): embeds any IPv4
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (SIIT): embeds any IPv4
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
}

// blocked reports whether a webhook may not be delivered to ip: anything
// but public unicast (loopback only when allowLoopback).
func blocked(ip netip.Addr, allowLoopback bool) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return !allowLoopback
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return true
	}
	for _, p := range extraBlocked {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// addrBlocked is blocked for a dialled "host:port".
func addrBlocked(address string, allowLoopback bool) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return true
	}
	return blocked(ip, allowLoopback)
}
