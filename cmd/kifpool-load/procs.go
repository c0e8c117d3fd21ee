package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process of the load run (serve or the sandbox bank).
type proc struct {
	name  string
	addr  string
	pprof string // serve's PPROF_ADDR, when profiling
	cmd   *exec.Cmd
	done  chan struct{}
}

// startProc runs bin with args and env (nothing else from our own
// environment but PATH, HOME and TMPDIR), its output into logPath, and
// waits until ready answers 200 (or the address takes connections).
func startProc(ctx context.Context, name, bin, addr, ready, logPath string, env map[string]string, args ...string) (*proc, error) {
	// logPath is under the run's own output folder (the -out flag), bin
	// is our own kifpool binary (the -bin flag): both come from whoever
	// runs the bench, not from the processes it talks to.
	f, err := os.OpenFile(filepath.Clean(logPath), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...) // #nosec G204 -- the bench harness launches our own kifpool binary (-bin) with arguments it builds itself
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(), "TZ=UTC"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close() // the start error is the one to report
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.done) }() // the child's exit is reported by stop; a log close error changes nothing
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("%s exited at start; log: %s", name, logPath)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		default:
		}
		if ready != "" {
			if res, err := http.Get(ready); err == nil { // #nosec G107 -- ready is the readiness URL of the child we just started on loopback
				_ = res.Body.Close() // only the status matters
				if res.StatusCode == http.StatusOK {
					return p, nil
				}
			}
		} else if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close() // a probe: the connection was only to see the port open
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s not ready after 60s; log: %s", name, logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// cpuSeconds is the process's user+system CPU time (/proc/PID/stat).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, ticks, ok := parseStat(string(b))
	if !ok {
		return 0
	}
	return float64(ticks) / 100 // USER_HZ is 100 on Linux
}

// peakRSSMB is VmHWM (peak resident set) in MB.
func peakRSSMB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// resetPeakRSS starts a new VmHWM measurement (Linux: clear_refs 5);
// false when the kernel refuses (then the peak is since start).
func resetPeakRSS(pid int) bool {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/clear_refs", pid), os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = io.WriteString(f, "5")
	return err == nil
}
