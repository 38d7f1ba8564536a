package proc

import (
	"os"
	"strconv"
	"testing"
)

func TestPIDNamespaceIsTheInodeOfProcSelfNsPid(t *testing.T) {
	p := PIDNamespace()
	if p == nil {
		t.Fatal("Linux has PID namespaces")
	}
	ns := *p
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skipf("no /proc/self/ns/pid here: %v", err)
	}
	if ns == 0 || link != "pid:["+strconv.FormatInt(ns, 10)+"]" {
		t.Fatalf("PIDNamespace() = %d, /proc/self/ns/pid = %q", ns, link)
	}
}

func TestParsePIDNamespace(t *testing.T) {
	for in, want := range map[string]int64{"pid:[4026531836]": 4026531836, "net:[4026531840]": 0, "pid:[]": 0, "pid:[x]": 0, "": 0, "pid:[-1]": 0} {
		if got := parsePIDNamespace(in); got != want {
			t.Errorf("parsePIDNamespace(%q) = %d, want %d", in, got, want)
		}
	}
}
