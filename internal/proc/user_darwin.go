package proc

// UID is the real user id of pid (kinfo_proc's p_ruid); ok is false when
// it cannot be read.
func UID(pid int) (uid int, ok bool) {
	k, ok := kinfo(pid)
	if !ok {
		return 0, false
	}
	return int(k.Eproc.Pcred.P_ruid), true
}
