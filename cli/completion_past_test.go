package cli_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestCompletePastLockNames: the commands that read the past complete
// every lock the log has an event of, released ones included; the lock
// commands only the locks there are now. Completing records nothing.
func TestCompletePastLockNames(t *testing.T) {
	root := t.TempDir()
	clitest.Must(t, 0, root, "acquire", "deploy-prod")
	for _, n := range []string{"nightly", "night-owl"} {
		rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", n).Stdout)
		clitest.Must(t, 0, root, "release", n, "--request-id", rid)
	}
	count := func() (n int64) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(root, "ledger.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"history", ""}, []string{"deploy-prod", "night-owl", "nightly"}},
		{[]string{"who", "ni"}, []string{"night-owl", "nightly"}},
		{[]string{"timeline", "--lock", "nig"}, []string{"night-owl", "nightly"}},
		{[]string{"replay", "--lock", "nightly"}, []string{"nightly"}},
		{[]string{"history", "x"}, nil},
		{[]string{"status", ""}, []string{"deploy-prod"}},
		{[]string{"release", "ni"}, nil},
	} {
		got, d := complete(t, root, c.args...)
		if !slices.Equal(got, c.want) || d != dirNoFileComp {
			t.Errorf("%q <Tab> = %v (directive %d), want %v", c.args, got, d, c.want)
		}
	}
	if after := count(); after != before {
		t.Errorf("completion recorded %d events", after-before)
	}
}
