package proc

import (
	"errors"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// macOS has no /proc: what Linux reads there comes from sysctl.
// kern.proc.pid gives one process's kinfo_proc (its state, parent, real
// uid, command name and start time), kern.proc.all every process's, and
// kern.procargs2 the arguments and environment of a process of this user.

// kinfo is pid's kinfo_proc; ok is false when there is no such process.
func kinfo(pid int) (*unix.KinfoProc, bool) {
	if pid <= 0 {
		return nil, false // 0 is the kernel, negative pids are groups
	}
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(k.Proc.P_pid) != pid {
		return nil, false
	}
	return k, true
}

// readProcArgs reads pid's kern.procargs2; ok is false when it cannot be
// read (gone, a zombie, another user's). A process in the middle of a
// fork, exec or exit makes the read fail with EIO for a moment: it is
// tried again, so that such a process of a job is not missed by a scan.
func readProcArgs(pid int) (procArgs, bool) {
	if pid <= 0 {
		return procArgs{}, false
	}
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	for try := 0; try < 3 && errors.Is(err, unix.EIO); try++ {
		time.Sleep(time.Millisecond)
		b, err = unix.SysctlRaw("kern.procargs2", pid)
	}
	if err != nil {
		return procArgs{}, false
	}
	return parseProcArgs(b)
}

// startOf is a process's start time as recorded (pid_start): seconds and
// microseconds of the wall clock at its fork. Linux records clock ticks
// since boot instead; either is only ever compared for equality with
// what the same machine read before.
func startOf(k *unix.KinfoProc) string {
	tv := k.Proc.P_starttime
	if tv.Sec == 0 && tv.Usec == 0 {
		return ""
	}
	return strconv.FormatInt(int64(tv.Sec), 10) + "." + strconv.FormatInt(int64(tv.Usec), 10)
}

// stateOf maps p_stat (sys/proc.h) to /proc/PID/stat's letters.
func stateOf(k *unix.KinfoProc) string {
	// p_stat 1 to 5: SIDL (being created), SRUN, SSLEEP, SSTOP, SZOMB.
	if st := k.Proc.P_stat; st >= 1 && st <= 5 {
		return string("IRSTZ"[st-1])
	}
	return "?"
}
