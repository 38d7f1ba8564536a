package proc

import (
	"os"
	"testing"
)

func TestPasswdName(t *testing.T) {
	for _, c := range []struct {
		out  string
		uid  int
		want string
	}{
		{"alice:x:1001:1001:Alice:/home/alice:/bin/bash\n", 1001, "alice"},
		{"alice:*:1001:100::/home/alice:/bin/sh", 1001, "alice"},
		{"alice:x:1002:1001::/:/bin/sh\n", 1001, ""}, // another uid
		{":x:1001:1001::/:/bin/sh\n", 1001, ""},
		{"garbage\n", 1001, ""},
		{"", 1001, ""},
	} {
		if got := passwdName([]byte(c.out), c.uid); got != c.want {
			t.Errorf("passwdName(%q, %d) = %q, want %q", c.out, c.uid, got, c.want)
		}
	}
}

func TestUID(t *testing.T) {
	if uid, ok := UID(os.Getpid()); !ok || uid != os.Getuid() {
		t.Fatalf("UID(self) = %d, %v; want %d", uid, ok, os.Getuid())
	}
	if _, ok := UID(-1); ok {
		t.Fatal("UID(-1) is known")
	}
}
