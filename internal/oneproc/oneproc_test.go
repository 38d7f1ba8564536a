package oneproc

import (
	"os"
	"runtime"
	"testing"
)

// A held process runs on one processor until Release, which gives back
// the runtime's own choice; a second Hold or Release changes nothing.
func TestHoldUntilRelease(t *testing.T) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Skip("GOMAXPROCS is set in this test's environment: Hold leaves it")
	}
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	if def == 1 {
		t.Skip("one processor: nothing to hold")
	}
	defer runtime.SetDefaultGOMAXPROCS()
	Hold()
	Hold()
	if n := runtime.GOMAXPROCS(0); n != 1 || !Held() {
		t.Fatalf("after Hold: GOMAXPROCS %d, held %v; want 1, true", n, Held())
	}
	Release()
	if n := runtime.GOMAXPROCS(0); n != def || Held() {
		t.Fatalf("after Release: GOMAXPROCS %d, held %v; want %d, false", n, Held(), def)
	}
	runtime.GOMAXPROCS(def + 1)
	Release() // not held: the caller's own setting stands
	if n := runtime.GOMAXPROCS(0); n != def+1 {
		t.Fatalf("Release of a process not held set GOMAXPROCS to %d, want the caller's %d", n, def+1)
	}
}

// A count of processors in GOMAXPROCS is the user's choice: Hold leaves
// it. A value the runtime ignores (empty, 0, a word) is no choice: Hold
// holds.
func TestHoldLeavesAnExplicitGOMAXPROCS(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	defer Release()
	for _, v := range []string{"2", "3"} {
		runtime.GOMAXPROCS(2)
		t.Setenv("GOMAXPROCS", v)
		Hold()
		if n := runtime.GOMAXPROCS(0); n != 2 || Held() {
			t.Fatalf("GOMAXPROCS=%s in the environment, after Hold: %d, held %v", v, n, Held())
		}
	}
	for _, v := range []string{"", "0", "-1", "two"} {
		runtime.GOMAXPROCS(2)
		t.Setenv("GOMAXPROCS", v)
		Hold()
		if n := runtime.GOMAXPROCS(0); n != 1 || !Held() {
			t.Fatalf("GOMAXPROCS=%q in the environment (which the runtime ignores), after Hold: %d, held %v", v, n, Held())
		}
		Release()
	}
}
