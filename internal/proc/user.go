package proc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"sync"
	"time"
)

// UserName is uid's name, "" when the system has none. The binary is built
// without cgo (a static binary starts faster), so os/user reads
// /etc/passwd only; a user known through NSS alone (LDAP, sssd) is asked
// of getent(1), which goes through the C library's NSS, and only then, so
// that an ordinary host pays nothing.
func UserName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	getent, err := exec.LookPath("getent")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, getent, "passwd", strconv.Itoa(uid)).Output()
	if err != nil {
		return ""
	}
	return passwdName(out, uid)
}

// passwdName is the name in a passwd(5) line for uid, "" when out is not one.
func passwdName(out []byte, uid int) string {
	line, _, _ := bytes.Cut(out, []byte("\n"))
	f := bytes.Split(line, []byte(":"))
	if len(f) < 3 || string(f[2]) != strconv.Itoa(uid) || len(f[0]) == 0 {
		return ""
	}
	return string(f[0])
}

// Self is who the kernel says runs this process: its real user id and that
// user's name ("" when the system has none), looked up once per process
// (the name lookup reads the user database).
var Self = sync.OnceValues(func() (int, string) {
	uid := os.Getuid()
	return uid, UserName(uid)
})
