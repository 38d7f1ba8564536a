package main

import (
	"flag"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if d, err := time.ParseDuration(os.Getenv(burnEnv)); err == nil {
		burnThenWait(d)
	}
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

// TestRunCmdChargesTheChildsWork: the CPU time and faults runCmd reports
// are the child's, and grow with what the child does (this test binary,
// run again to touch 64 MiB, against /bin/true).
func TestRunCmdChargesTheChildsWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ru_minflt is Linux's")
	}
	small := runCmd(os.Environ(), "/bin/true")
	big := runCmd(append(os.Environ(), "BENCH_TEST_TOUCH=1"), os.Args[0], "-test.run", "^TestTouchForRunCmd$")
	if small.wall <= 0 || small.faults <= 0 {
		t.Fatalf("true: %+v", small)
	}
	if big.faults < small.faults+64<<20/int64(os.Getpagesize())/2 {
		t.Errorf("a child touching 64 MiB took %d faults, true %d: the child's own faults are not what is reported", big.faults, small.faults)
	}
	if big.cpu <= small.cpu {
		t.Errorf("a child touching 64 MiB used %v of CPU, true %v", big.cpu, small.cpu)
	}
	if c := freshPageCost(); c <= 0 || c > time.Millisecond {
		t.Errorf("a fresh page costs %v", c)
	}
}

// TestTouchForRunCmd is the child of TestRunCmdChargesTheChildsWork.
func TestTouchForRunCmd(t *testing.T) {
	if os.Getenv("BENCH_TEST_TOUCH") == "" {
		t.Skip("the child of TestRunCmdChargesTheChildsWork")
	}
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	runtime.KeepAlive(b)
}
