package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestVerifyRecordsNothingOnARestoredRoot: a whole root put back from an
// older `cp -a` copy (its ledger.pin with it) is behind the head this
// user's trust store keeps. verify reports it (exit 1) and records
// nothing there: its ledger_verified would make the older state another
// history of the kept head. Each verify finds the same events; the
// writer's refusal, and `project --accept-rollback`, are as before.
func TestVerifyRecordsNothingOnARestoredRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, backup := filepath.Join(dir, "root"), filepath.Join(dir, "backup")
	clitest.Must(t, 0, root, "run", "a", "--", "true")
	if out, err := exec.Command("cp", "-a", root, backup).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	for _, l := range []string{"b", "c", "d"} {
		clitest.Must(t, 0, root, "run", l, "--", "true")
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", backup, root).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v: %s", err, out)
	}
	var events int64
	for i := range 4 {
		r := clitest.Run(t, root, "verify", "--json")
		v := clitest.DecodeVerify(t, r)
		if r.Code != 1 || v.OK || v.FirstBad == nil || !strings.Contains(r.Stderr, "not recorded") {
			t.Fatalf("verify %d of the restored root: exit %d, ok %v, first bad %+v; want 1 and not recorded\nstderr: %s", i, r.Code, v.OK, v.FirstBad, r.Stderr)
		}
		if i == 0 {
			events = v.Events
		} else if v.Events != events {
			t.Fatalf("verify %d of the restored root found %d events, the first %d: a verify was recorded in it\nstderr: %s", i, v.Events, events, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "fewer than the checkpoint") {
			t.Errorf("verify %d's unrecorded line does not say the ledger is behind the kept head:\n%s", i, r.Stderr)
		}
	}
	clitest.Must(t, 1, root, "acquire", "e")
	clitest.Must(t, 0, root, "project", "--accept-rollback")
	if r := clitest.Run(t, root, "verify", "--json"); r.Code != 0 || strings.Contains(r.Stderr, "not recorded") {
		t.Fatalf("verify after the rollback was accepted: exit %d\nstderr: %s", r.Code, r.Stderr)
	}
}
