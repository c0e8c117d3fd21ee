package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Where a step's CPU went. serve's own time is measured exactly
// (cpuSeconds of its pid, measure); the database's and the load
// generator's beside it show what the 2-core machine's other share paid
// for the same requests: a ratio against pgbench or a static page is a
// ratio of whole-machine costs, and these say which process holds them.

// dbMeter sums the CPU time of the machine's PostgreSQL processes (comm
// "postgres": backends, WAL writer, checkpointer, autovacuum) over a
// step, sampling /proc every 200 ms. A process that exits loses at most
// its last interval; one that starts during the step counts from its
// start. It reads zero where no PostgreSQL process is visible (a database
// on another host).
type dbMeter struct {
	stop  chan struct{}
	total chan float64
}

func startDBMeter() *dbMeter {
	m := &dbMeter{stop: make(chan struct{}), total: make(chan float64, 1)}
	last := postgresTicks()
	go func() {
		var sum int64
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				sum += tickDelta(last, postgresTicks())
				m.total <- float64(sum) / 100 // USER_HZ
				return
			case <-t.C:
				now := postgresTicks()
				sum += tickDelta(last, now)
				last = now
			}
		}
	}()
	return m
}

// Stop ends the metering and returns the database's CPU seconds.
func (m *dbMeter) Stop() float64 {
	close(m.stop)
	return <-m.total
}

// tickDelta is what the processes of now spent since last: the growth of
// each one seen in both, the whole of each new one.
func tickDelta(last, now map[int]int64) int64 {
	var d int64
	for pid, t := range now {
		if t0, ok := last[pid]; ok {
			if t > t0 {
				d += t - t0
			}
			continue
		}
		d += t
	}
	return d
}

// postgresTicks is the user+system clock ticks of every process named
// postgres, by pid.
func postgresTicks() map[int]int64 {
	out := make(map[int]int64)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if comm, ticks, ok := parseStat(string(b)); ok && comm == "postgres" {
			out[pid] = ticks
		}
	}
	return out
}

// parseStat reads a /proc/PID/stat line: the command name (in
// parentheses, may hold spaces) and user+system ticks (fields 14 and 15).
func parseStat(s string) (comm string, ticks int64, ok bool) {
	i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if i < 0 || j < i {
		return "", 0, false
	}
	f := strings.Fields(s[j+1:])
	if len(f) < 13 {
		return "", 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return s[i+1 : j], ut + st, true
}

// withCPU runs a step that measures itself without serve (the database's
// limit from Go) and adds to its row the database's CPU and the load
// generator's own.
func withCPU(f func() Row) Row {
	m := startDBMeter()
	self0 := cpuSeconds(os.Getpid())
	r := f()
	r.DBCPUSeconds = m.Stop()
	r.LoadCPUSeconds = cpuSeconds(os.Getpid()) - self0
	return r
}

// cpuPer is a row's CPU per request, by process, in ms: the cost the
// machine's cores pay for each one.
func cpuPer(r Row, server string) string {
	if r.Requests == 0 {
		return ""
	}
	per := func(s float64) float64 { return 1000 * s / float64(r.Requests) }
	total := r.DBCPUSeconds + r.CPUSeconds + r.BankCPUSeconds + r.LoadCPUSeconds
	parts := []string{fmt.Sprintf("PostgreSQL %.2f", per(r.DBCPUSeconds))}
	if server != "" {
		parts = append(parts, fmt.Sprintf("%s %.2f", server, per(r.CPUSeconds)))
	}
	if r.BankCPUSeconds >= 0.05 {
		parts = append(parts, fmt.Sprintf("bank %.2f", per(r.BankCPUSeconds)))
	}
	parts = append(parts, fmt.Sprintf("load %.2f", per(r.LoadCPUSeconds)))
	return fmt.Sprintf("CPU per request %s = %.2f ms", strings.Join(parts, " + "), per(total))
}

// bankCPU is the sandbox bank's CPU seconds so far (0 before it runs).
func (bn *bench) bankCPU() float64 {
	if bn.bankPID == 0 {
		return 0
	}
	return cpuSeconds(bn.bankPID)
}
