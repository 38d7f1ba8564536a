package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestPostgresAuditorLockAttemptWritesNothingAnywhere: an auditor (the
// PostgreSQL page's role that may only read) that tries to take a lock,
// with acquire or with run, is refused (exit 1, saying that the role may
// not append events) before anything is made: no root, no trust store
// where there was none, a trust store in use left byte for byte as it
// was, and no event in the database. Also with a grant too many (UPDATE
// on writer_lock), where the writer lock itself does not refuse it.
func TestPostgresAuditorLockAttemptWritesNothingAnywhere(t *testing.T) {
	t.Parallel()
	roles := newREADMERoles(t)
	counts := func() string {
		return scalar(t, roles.ownerDB, `SELECT (SELECT count(*) FROM events) || '/' || (SELECT count(*) FROM checkpoints)`)
	}
	dir := t.TempDir()
	// A trust store the auditor's user already writes with elsewhere:
	// its key, its pin of another root and its kept head.
	used := filepath.Join(dir, "used-trust")
	elsewhere := filepath.Join(dir, "sqlite-root")
	if r := clitest.RunWith(t, elsewhere, []string{"LOCKLEDGER_TRUST_DIR=" + used}, "", "run", "other", "--", "true"); r.Code != 0 {
		t.Fatalf("a write elsewhere with the auditor's trust store: exit %d\n%s", r.Code, r.Stderr)
	}
	attempts := []struct {
		name string
		args []string
	}{
		{"acquire", []string{"acquire", "deploy-prod"}},
		{"run", []string{"run", "deploy-prod", "--", "true"}},
	}
	check := func(phase string) func(*testing.T) {
		return func(t *testing.T) {
			for _, a := range attempts {
				for _, trustDir := range []string{filepath.Join(dir, phase+"-"+a.name+"-trust"), used} {
					before, usedBefore := counts(), treeListing(t, used)
					h := &pgHost{id: "auditor-host", root: filepath.Join(dir, phase+"-"+a.name+"-root-with-"+filepath.Base(trustDir)), url: roles.auditor, trust: trustDir}
					r := h.run(t, a.args...)
					if r.Code != 1 || !strings.Contains(r.Stderr, "may not append events") || !strings.Contains(r.Stderr, "INSERT on events") {
						t.Errorf("%s as the auditor: exit %d, want 1 saying the role may not append events\nstderr: %s", a.name, r.Code, r.Stderr)
					}
					if _, err := os.Lstat(h.root); !os.IsNotExist(err) {
						t.Errorf("%s as the auditor made its root %s (%v)", a.name, h.root, err)
					}
					if trustDir != used {
						if _, err := os.Lstat(trustDir); !os.IsNotExist(err) {
							t.Errorf("%s as the auditor made a trust store %s (%v): %s", a.name, trustDir, err, treeListing(t, trustDir))
						}
					} else if after := treeListing(t, used); after != usedBefore {
						t.Errorf("%s as the auditor changed its trust store:\nbefore:\n%s\nafter:\n%s", a.name, usedBefore, after)
					}
					if after := counts(); after != before {
						t.Errorf("%s as the auditor: events/checkpoints %s, were %s", a.name, after, before)
					}
				}
			}
		}
	}
	t.Run("select only", check("select"))
	u, err := url.Parse(roles.auditor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roles.ownerDB.Exec(`GRANT UPDATE ON writer_lock TO ` + u.User.Username()); err != nil {
		t.Fatal(err)
	}
	t.Run("may take the writer lock", check("writer-lock"))
}
