//go:build unix

package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock(2) of path (created mode
// 0600) for the process's life and writes the holder (this process's id
// and addr) into it; a lock another open file holds (another process, or
// another serve of this one) is an *InstanceConflictError naming what the
// file says. The file itself is never removed (a remove races with the
// next lock); release truncates it and unlocks.
func lockFile(path, addr string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) // #nosec G304 -- beside the operator's database file
	if err != nil {
		return nil, fmt.Errorf("serve lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil { // #nosec G115 -- a file descriptor
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			conflict := &InstanceConflictError{File: path}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				k, v, _ := strings.Cut(sc.Text(), " ")
				switch k {
				case "pid":
					conflict.PID, _ = strconv.Atoi(v)
				case "addr":
					conflict.Addr = v
				}
			}
			return nil, conflict
		}
		return nil, fmt.Errorf("serve lock %s: %w", path, err)
	}
	holder := fmt.Sprintf("pid %d\naddr %s\n", os.Getpid(), addr)
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(holder), 0)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("serve lock %s: %w", path, err)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) // #nosec G115 -- a file descriptor
		_ = f.Close()
	}, nil
}
