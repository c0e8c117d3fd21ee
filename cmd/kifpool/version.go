package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// What `make build` passes with -ldflags "-X main.name=…" (empty in a
// plain go build); written by the linker, never by the program. buildTime
// is when the binary was built (RFC 3339, UTC); the git values stand in
// for Go's own VCS data when it has none (a build in a git worktree).
var buildTime, gitRevision, gitTime, gitModified string

// version describes the running binary: its module version, the VCS
// revision it was built from, and when it was built.
type version struct {
	Module    string // module path
	Version   string // module version: a tag, or a pseudo-version from the commit ("(devel)" without VCS data)
	Revision  string // VCS revision ("" when the build recorded none)
	Modified  bool   // built from a tree with uncommitted changes
	CommitAt  string // the revision's commit time (vcs.time)
	BuiltAt   string // build time (make build), "" when unknown
	GoVersion string
}

// readVersion reads the build information the Go toolchain embeds
// (runtime/debug.ReadBuildInfo) and the build time the Makefile passes.
func readVersion(info *debug.BuildInfo, ok bool, builtAt string) version {
	v := version{Version: "(unknown)", BuiltAt: builtAt}
	if !ok || info == nil {
		return v
	}
	v.Module, v.Version, v.GoVersion = info.Main.Path, info.Main.Version, info.GoVersion
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.CommitAt = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// current is the running binary's version.
func current() version {
	info, ok := debug.ReadBuildInfo()
	v := readVersion(info, ok, buildTime)
	if v.Revision == "" && gitRevision != "" {
		v.Revision, v.CommitAt, v.Modified = gitRevision, gitTime, gitModified == "true"
	}
	return v
}

// LogArgs are the version's fields for a log line.
func (v version) LogArgs() []any {
	return []any{"version", v.Version, "revision", v.revision(), "commit_time", orUnknown(v.CommitAt),
		"build_time", orUnknown(v.BuiltAt), "go", v.GoVersion}
}

func (v version) revision() string {
	r := orUnknown(v.Revision)
	if v.Modified {
		r += " (modified)"
	}
	return r
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// write prints the version for people (`kifpool version`).
func (v version) write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kifpool %s\n", v.Version)
	fmt.Fprintf(&b, "  module:      %s\n", orUnknown(v.Module))
	fmt.Fprintf(&b, "  revision:    %s\n", v.revision())
	fmt.Fprintf(&b, "  commit time: %s\n", orUnknown(v.CommitAt))
	built := orUnknown(v.BuiltAt)
	if v.BuiltAt == "" {
		built += " (built without make build)"
	}
	fmt.Fprintf(&b, "  build time:  %s\n", built)
	fmt.Fprintf(&b, "  go:          %s\n", orUnknown(v.GoVersion))
	_, err := io.WriteString(w, b.String())
	return err
}
