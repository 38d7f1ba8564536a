package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// TestStalePinRefusesBeforeStartingALedger: the trust store pins a ledger
// at a root whose path was then emptied or removed. A writing command
// there (acquire, run, init) is refused, exit 1, naming the pin and
// `lockledger trust forget`, before anything is made: no root, no
// ledger.db in the emptied root, no tables in an empty database, and the
// pin as it was. Once the pin is forgotten a new ledger starts there.
func TestStalePinRefusesBeforeStartingALedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	trustDir := clitest.TrustDir(root)
	clitest.Must(t, 0, root, "run", "old", "--", "true")
	pins := func() string {
		b, err := os.ReadFile(filepath.Join(trustDir, "known_ledgers"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pinned := pins()
	check := func(what string, r clitest.Result, left func() string) {
		t.Helper()
		if r.Code != 1 || !strings.Contains(r.Stderr, "holds no ledger") || !strings.Contains(r.Stderr, "nothing was created") ||
			!strings.Contains(r.Stderr, "trust forget") {
			t.Errorf("%s at a root the trust store pins: exit %d, want 1 naming the pin\nstderr: %s", what, r.Code, r.Stderr)
		}
		if l := left(); l != "" {
			t.Errorf("%s at a root the trust store pins left %s behind", what, l)
		}
		if p := pins(); p != pinned {
			t.Errorf("%s changed the pins:\n%s\nwere:\n%s", what, p, pinned)
		}
	}
	for _, emptied := range []bool{false, true} {
		if err := os.RemoveAll(root); err != nil {
			t.Fatal(err)
		}
		left := func() string {
			if _, err := os.Lstat(root); !os.IsNotExist(err) {
				return "the root"
			}
			return ""
		}
		if emptied {
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			left = func() string {
				if entries, _ := os.ReadDir(root); len(entries) > 0 {
					return entries[0].Name()
				}
				return ""
			}
		}
		for _, args := range [][]string{{"acquire", "new"}, {"run", "new", "--", "true"}, {"init"}} {
			check(strings.Join(args, " "), clitest.Run(t, root, args...), left)
		}
	}

	// The emptied root of a PostgreSQL writer, and an empty database.
	url := pgtest.NewDatabase(t)
	h := &pgHost{id: "pinned-host", root: root, url: url, trust: trustDir}
	r := h.run(t, "acquire", "new")
	check("acquire with an empty database", r, func() string {
		if n := publicTables(t, url); n != "0" {
			return n + " tables in the database"
		}
		if entries, _ := os.ReadDir(root); len(entries) > 0 {
			return entries[0].Name()
		}
		return ""
	})

	clitest.Must(t, 0, root, "trust", "forget", "--yes")
	clitest.Must(t, 0, root, "run", "new", "--", "true")
}

// Many first writes of one host at once on a database that holds no
// ledger yet (a fleet host's jobs starting together): one makes the
// ledger and pins it in the trust store, and every other joins it. Before,
// one that had found the database empty and then met the new pin was
// refused as if the root's path had been reused ("holds no ledger, but
// known_ledgers pins ledger ... there"), or told that the root served
// another ledger.
func TestPostgresFirstWritesOfOneHostAtOnceJoinOneLedger(t *testing.T) {
	t.Parallel()
	const procs = 12
	for trial := range 5 {
		h := newPGHost(t, "alpha", pgtest.NewDatabase(t))
		h.trust = filepath.Join(t.TempDir(), "trust")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		results := make([]clitest.Result, procs)
		var wg sync.WaitGroup
		for i := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := h.command(ctx, "acquire", fmt.Sprintf("l%d", i), "--pid", "1")
				var out, errb bytes.Buffer
				c.Stdout, c.Stderr = &out, &errb
				_ = c.Run()
				results[i] = clitest.Result{Code: c.ProcessState.ExitCode(), Stdout: out.String(), Stderr: errb.String()}
			}()
		}
		wg.Wait()
		cancel()
		for i, r := range results {
			if r.Code != 0 {
				t.Fatalf("trial %d: first write %d of %d at once: exit %d\n%s", trial, i, procs, r.Code, r.Stderr)
			}
		}
	}
}
