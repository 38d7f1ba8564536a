package main

import (
	"flag"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if *measured {
		runMeasured(flag.Args())
	}
	os.Exit(m.Run())
}

// TestMeasureReportsTheChildsOwnPeak: a child started by a process that
// has touched 256 MiB peaks at its own size, not at its parent's.
func TestMeasureReportsTheChildsOwnPeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ru_maxrss in KiB is Linux's")
	}
	big := make([]byte, 256<<20)
	for i := 0; i < len(big); i += 4096 {
		big[i] = 1
	}
	took, rss, out, err := measure(exec.Command("/bin/true"))
	runtime.KeepAlive(big)
	if err != nil {
		t.Fatalf("measure: %v\n%s", err, out)
	}
	if took <= 0 {
		t.Errorf("wall time %v", took)
	}
	if rss <= 0 || rss > 64<<10 {
		t.Errorf("peak RSS of true: %d KiB; want above 0 and below 64 MiB (its parent touched 256 MiB)", rss)
	}
}
