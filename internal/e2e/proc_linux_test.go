package e2e

import (
	"os/exec"
	"syscall"
)

// setChildAttrs makes the kernel kill the child if the test binary dies
// (a test time-out, ^C): no leftover processes even then.
func setChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
