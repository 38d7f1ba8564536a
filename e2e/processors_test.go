package e2e

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// gomaxprocs is the processor count in each line the Go scheduler's trace
// (GODEBUG=schedtrace=MS) writes on stderr.
var gomaxprocs = regexp.MustCompile(`(?m)^SCHED \d+ms: gomaxprocs=(\d+) `)

// lastProcs is the processor count of the last scheduler trace line r
// wrote, which is what its command ran on.
func lastProcs(t *testing.T, r clitest.Result) int {
	t.Helper()
	m := gomaxprocs.FindAllStringSubmatch(r.Stderr, -1)
	if len(m) == 0 {
		t.Fatalf("no scheduler trace on stderr:\n%s", r.Stderr)
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// A real lockledger process runs a lock command on one processor and a
// reader of the whole log (verify's pipeline) on every processor the
// runtime chooses; GOMAXPROCS in the environment is obeyed by both.
func TestLockCommandsRunOnOneProcessorAndReadersOnAll(t *testing.T) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Skip("GOMAXPROCS is set in this test's environment, which the commands inherit")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the runtime gives a process one processor here: nothing to hold or release")
	}
	root := t.TempDir()
	trace := []string{"GODEBUG=schedtrace=1"}
	clitest.Must(t, 0, root, "init")
	run := clitest.RunWith(t, root, trace, "", "run", "deploy", "--", "sleep", "0.05")
	verify := clitest.RunWith(t, root, trace, "", "verify")
	if run.Code != 0 || verify.Code != 0 {
		t.Fatalf("run: %d %s\nverify: %d %s", run.Code, run.Stderr, verify.Code, verify.Stderr)
	}
	if n := lastProcs(t, run); n != 1 {
		t.Errorf("run ran on %d processors, want 1", n)
	}
	if n := lastProcs(t, verify); n < 2 {
		t.Errorf("verify ran on %d processor(s), want every one (%d here)", n, runtime.GOMAXPROCS(0))
	}
	explicit := clitest.RunWith(t, root, append(trace, "GOMAXPROCS=2"), "", "run", "deploy", "--", "sleep", "0.05")
	if n := lastProcs(t, explicit); explicit.Code != 0 || n != 2 {
		t.Errorf("run with GOMAXPROCS=2: exit %d, ran on %d processors", explicit.Code, n)
	}
}
