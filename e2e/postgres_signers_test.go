package e2e

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cp "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
)

// A fleet on PostgreSQL: four hosts, each with a trust store (and so a
// signing key) of its own, stand in for four users (separate
// LOCKLEDGER_TRUST_DIR and host ids, one OS uid). The owner registers the
// other hosts' keys; each host pins the owner's key. One host stays idle
// for longer than the checkpoint interval while the others write, and a
// fifth host whose key is not registered appends only (it stores no
// checkpoint): verify passes on every host, and for an auditor with no key of its own given
// the signer set; a rewrite, a cut tail and a deleted range the heads
// covered fail on every host.
func TestPostgresFleetOfSignersIdleHostVerifiesAndTamperFailsEverywhere(t *testing.T) {
	c := pgtest.Get(t)
	name := pgtest.CreateDatabase(t)
	url := c.SocketURL(name)
	const interval = 2 * time.Second
	hosts := make([]*pgHost, 4)
	for i := range hosts {
		hosts[i] = newPGHost(t, "fleet-"+string(rune('a'+i)), url)
		hosts[i].trust = t.TempDir()
	}
	env := func(h *pgHost) []string { return append(h.env(), "LOCKLEDGER_CHECKPOINT_INTERVAL="+interval.String()) }
	run := func(h *pgHost, want int, args ...string) clitest.Result {
		t.Helper()
		r := clitest.RunWith(t, h.root, env(h), "", args...)
		if r.Code != want {
			t.Fatalf("%s: lockledger %s: exit %d, want %d\nstdout: %s\nstderr: %s", h.id, strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
		}
		return r
	}
	var shown struct {
		VerifierKey string `json:"verifier_key"`
		Pins        []struct {
			LedgerID string `json:"ledger_id"`
		} `json:"pins"`
	}
	keys := make([]string, len(hosts))
	var ledgerID string
	for i, h := range hosts {
		run(h, 0, "run", "job-"+h.id, "--", "true") // makes the host's key and pins the ledger
		if err := json.Unmarshal([]byte(run(h, 0, "trust", "show", "--json").Stdout), &shown); err != nil || shown.VerifierKey == "" || len(shown.Pins) == 0 {
			t.Fatalf("%s: trust show: %v %+v", h.id, err, shown)
		}
		keys[i], ledgerID = shown.VerifierKey, shown.Pins[0].LedgerID
	}
	owner := hosts[0]
	for i, h := range hosts[1:] {
		run(owner, 0, "signer", "add", keys[i+1], "--role", "host")
		run(h, 0, "trust", "pin", "--ledger-id", ledgerID, "--verifier-key", keys[0])
	}
	list := run(owner, 0, "signer", "list", "--keys").Stdout
	if got := strings.Count(strings.TrimSpace(list), "\n") + 1; got != 4 {
		t.Fatalf("signer list --keys: %d keys, want 4:\n%s", got, list)
	}
	// A host whose key the owner does not register only appends: it
	// stores no checkpoint, so it promises nothing it could not keep.
	appender := newPGHost(t, "fleet-appender", url)
	appender.trust = t.TempDir()
	run(appender, 0, "run", "job-"+appender.id, "--", "true")
	if err := json.Unmarshal([]byte(run(appender, 0, "trust", "show", "--json").Stdout), &shown); err != nil || shown.VerifierKey == "" {
		t.Fatalf("%s: trust show: %v %+v", appender.id, err, shown)
	}
	appenderKey, err := cp.NewVerifier(shown.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	run(appender, 0, "trust", "pin", "--ledger-id", ledgerID, "--verifier-key", keys[0])
	idle := hosts[3]
	run(idle, 0, "run", "last-of-"+idle.id, "--", "true") // signs a checkpoint, and its promise
	// The others write for longer than the interval the idle host promised.
	start := time.Now()
	for n := 0; time.Since(start) < 2*interval || n < 6; n++ {
		run([]*pgHost{hosts[1], hosts[2], appender}[n%3], 0, "run", "busy", "--", "true")
	}
	fleetDB, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	rows, err := fleetDB.Query(`SELECT note FROM checkpoints`)
	for err == nil && rows.Next() {
		var n string
		if err = rows.Scan(&n); err == nil {
			notes = append(notes, n)
		}
	}
	if err == nil {
		err = rows.Err()
	}
	fleetDB.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		if _, err := cp.Open([]byte(n), appenderKey); err == nil {
			t.Errorf("a checkpoint row signed by the unregistered host:\n%s", n)
		}
	}
	hosts = append(hosts, appender)
	for _, h := range hosts {
		if r := run(h, 0, "verify"); !strings.Contains(r.Stdout, "verify: OK") {
			t.Fatalf("%s: verify: %s", h.id, r.Stdout)
		}
	}
	auditor := newPGHost(t, "auditor", url)
	auditor.trust = t.TempDir()
	signers := filepath.Join(t.TempDir(), "signers")
	if err := os.WriteFile(signers, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(auditor, 0, "verify", "--signers", signers)
	if !strings.Contains(r.Stdout, "verify: OK") || strings.Contains(r.Stderr, "unsigned") {
		t.Fatalf("auditor's verify --signers: %s\n%s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(auditor.trust, "signing.key")); err == nil {
		t.Errorf("the auditor's verify made a signing key of its own")
	}

	// Each tampering on a copy of the database (one ledger id, so each
	// host's pin and head apply), checked on every host.
	admin, err := sql.Open("pgx", c.SocketURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, tc := range []struct{ name, sql string }{
		{"rewrite", `UPDATE events SET actor = 'mallory', body = convert_to(replace(convert_from(body, 'UTF8'), '"actor":"', '"actor":"x'), 'UTF8') WHERE seq = 3`},
		{"cut", `DELETE FROM checkpoints WHERE size > (SELECT max(seq) - 3 FROM events);
			DELETE FROM tlog_hashes WHERE seq > (SELECT max(seq) - 3 FROM events);
			DELETE FROM events WHERE seq > (SELECT max(seq) - 3 FROM events)`},
		{"deleted range", `DELETE FROM tlog_hashes WHERE seq BETWEEN 4 AND 6; DELETE FROM events WHERE seq BETWEEN 4 AND 6`},
	} {
		copyName := name + "_" + strings.ReplaceAll(tc.name, " ", "_")
		if _, err := admin.Exec(`CREATE DATABASE "` + copyName + `" TEMPLATE "` + name + `"`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS "` + copyName + `" WITH (FORCE)`) })
		db, err := sql.Open("pgx", c.SocketURL(copyName))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin()
		if err == nil {
			_, err = tx.Exec(`SET LOCAL session_replication_role = replica`)
		}
		for _, s := range strings.Split(tc.sql, ";") {
			if err == nil {
				_, err = tx.Exec(s)
			}
		}
		if err == nil {
			err = tx.Commit()
		}
		db.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkers := hosts
		if tc.name != "cut" {
			// The auditor keeps no head: a tail cut with its checkpoints
			// is seen only by a head from outside (--checkpoint).
			checkers = append(checkers[:len(checkers):len(checkers)], auditor)
		}
		for _, h := range checkers {
			copyHost := *h
			copyHost.url = c.SocketURL(copyName)
			args := []string{"verify", "--json"}
			if h == auditor {
				args = append(args, "--signers", signers)
			}
			r := clitest.RunWith(t, copyHost.root, env(&copyHost), "", args...)
			if r.Code != 1 {
				t.Errorf("%s: %s: verify: exit %d, want 1\n%s\n%s", tc.name, h.id, r.Code, r.Stdout, r.Stderr)
			}
		}
	}
}
