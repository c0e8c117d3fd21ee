package config

import (
	"fmt"
	"strings"

	"github.com/kifpool/kifpool/internal/gateway/drivers"
	payoutdrivers "github.com/kifpool/kifpool/internal/payout/drivers"
)

// byGroup returns the options in the reference's order: group by group,
// within a group in the table's order.
func byGroup() []Option {
	opts := Options()
	out := make([]Option, 0, len(opts))
	groups := []string{groupServer, groupGateway}
	for _, d := range drivers.All() {
		groups = append(groups, driverGroup(d))
	}
	groups = append(groups, groupLimits, groupWithdrawals)
	for _, d := range payoutdrivers.All() {
		groups = append(groups, payoutDriverGroup(d))
	}
	groups = append(groups, groupBank, groupWorker, groupRetention, groupSecurity, groupOperator)
	for _, g := range groups {
		for _, o := range opts {
			if o.Group == g {
				out = append(out, o)
			}
		}
	}
	return out
}

// ReferencePath is where the generated reference lives in the repository.
const ReferencePath = "docs/configuration.md"

// Reference is the configuration reference (docs/configuration.md),
// generated from the table of options.
func Reference() string {
	var b strings.Builder
	b.WriteString(`# Configuration reference

<!-- Generated from the table of options in internal/config/options.go by "make docs"
     (kifpool config --reference): edit the table, not this file. A test fails when they differ. -->

Kifpool reads every setting from the environment; nothing else is read. Each variable is checked
when a command starts, and every bad value is reported at once, with the variable's name, before
anything runs. A blank variable is the same as an unset one.

` + "`kifpool config`" + ` prints the configuration in effect, with where each value came from (the
environment or the default); secrets are masked. Every command reads the same environment as
` + "`serve`" + `, so run it with the same variables.

Durations are written as Go durations: ` + "`500ms`, `3s`, `2m`, `1h`" + `.
`)
	group := ""
	for _, o := range byGroup() {
		if o.Group != group {
			group = o.Group
			fmt.Fprintf(&b, "\n## %s\n\n| variable | default | accepts | meaning |\n|---|---|---|---|\n", group)
		}
		def := "*(unset)*"
		if o.Default != "" {
			def = "`" + o.Default + "`"
		}
		if o.DefaultDoc != "" {
			def = o.DefaultDoc
		}
		doc := o.Doc
		if o.Secret {
			doc += ". **Secret**: `kifpool config` masks it"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.Name, cell(def), cell(o.Accepts()), cell(doc))
	}
	return b.String()
}

// cell keeps text inside one Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Setting is one option's value in effect.
type Setting struct {
	Name   string
	Value  string // masked when the option is a secret
	Source string // "environment", "default", "unset" or "the sandbox bank's"
	Secret bool
}

// Effective lists every option's value in effect in c (as Load made it
// from getenv), secrets masked.
func Effective(c Config, getenv Getenv) []Setting {
	var out []Setting
	for _, o := range byGroup() {
		s := Setting{Name: o.Name, Value: o.p.show(c), Source: "default", Secret: o.Secret}
		switch {
		case strings.TrimSpace(getenv(o.Name)) != "":
			s.Source = "environment"
		case s.Value == "":
			s.Source = "unset"
		case o.driver != "" && c.Gateway == GatewaySandbox:
			s.Source = "the sandbox bank's"
		}
		if o.Secret && s.Value != "" {
			s.Value = fmt.Sprintf("******** (%d characters)", len(s.Value))
		}
		out = append(out, s)
	}
	return out
}
