package proc

// PIDNamespace: macOS has no PID namespaces (ok false); every process on
// the machine sees the same pids.
func PIDNamespace() (ns int64, ok bool) { return 0, false }
