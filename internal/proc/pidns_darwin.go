package proc

// PIDNamespace: macOS has no PID namespaces (nil); every process on the
// machine sees the same pids.
func PIDNamespace() *int64 { return nil }
