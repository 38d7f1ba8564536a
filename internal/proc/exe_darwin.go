package proc

import (
	"bytes"
	"os"
	"path/filepath"
)

// IsLockledger reports whether pid runs this program: the path it was
// executed by (kern.procargs2) names this process's executable file. A
// relative path, or a file replaced since (an upgrade while an older
// `lockledger run` kept running), is not recognised: such a runner is
// neither poked nor awaited, as any other holder.
func IsLockledger(pid int) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	p, ok := readProcArgs(pid)
	if !ok || !filepath.IsAbs(p.exe) {
		return false
	}
	if p.exe == self {
		return true
	}
	a, err := os.Stat(p.exe)
	if err != nil {
		return false
	}
	b, err := os.Stat(self)
	return err == nil && os.SameFile(a, b)
}

// Comm is pid's command name (kinfo_proc's p_comm, at most 16 bytes), ""
// when unreadable.
func Comm(pid int) string {
	k, ok := kinfo(pid)
	if !ok {
		return ""
	}
	name := k.Proc.P_comm[:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return string(name)
}

// Args is pid's argument vector (kern.procargs2), nil when unreadable.
func Args(pid int) []string {
	p, ok := readProcArgs(pid)
	if !ok {
		return nil
	}
	return p.args
}
