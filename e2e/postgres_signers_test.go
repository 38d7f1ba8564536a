package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cp "github.com/lockledger/lockledger/checkpoint"
	"github.com/lockledger/lockledger/internal/clitest"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
)

// Uids of the fleet test's users: no entries in the user database are
// needed, the kernel checks the numbers.
const (
	fleetOwnerUID   = 54311 // fleet-a, which registers the other hosts' keys
	fleetAuditorUID = 54316
	malloryUID      = 54317 // can write the database, holds no key the fleet trusts
)

// fleetUser is one OS user of a PostgreSQL fleet: its uid, a root of its
// own (0700, owned by it), a trust store of its own, a host id, and the
// PostgreSQL role it connects as (over TCP: the cluster's socket
// directory is the server user's alone).
type fleetUser struct {
	id          string
	uid         int
	root, trust string
	role        string
}

// TestPostgresFleetOfSignersIdleHostVerifiesAndTamperFailsEverywhere: a
// fleet on PostgreSQL of four hosts, each a separate OS user with its own
// root, trust store (and so signing key) and host id. The owner (the
// database's owner role) registers the other hosts' keys; the others,
// writer role, pin the owner's key. One host stays idle for longer than
// the checkpoint interval while the others write, and a fifth host whose
// key is not registered appends only (it stores no checkpoint): verify
// passes on every host, and for an auditor (another user, the read-only
// role) with no key of its own given the signer set. A rewrite, a cut
// tail, a deleted range and a prune of a range every kept head covers
// (a steal in it, the archive deleted) by a user who can write the
// database but holds no key the fleet trusts fail on every host.
func TestPostgresFleetOfSignersIdleHostVerifiesAndTamperFailsEverywhere(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to run the fleet's hosts as separate users (runs as root in CI)")
	}
	c := pgtest.Get(t)
	name := pgtest.CreateDatabase(t)
	admin, err := sql.Open("pgx", c.SocketURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	const interval = 2 * time.Second
	dir, bin := binForOthers(t)
	suffix := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	writerRole, auditorRole := "w_"+suffix, "a_"+suffix
	newUser := func(id string, uid int, role string) *fleetUser {
		u := &fleetUser{id: id, uid: uid, root: filepath.Join(dir, id), role: role}
		if err := os.Mkdir(u.root, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(u.root, uid, uid); err != nil {
			t.Fatal(err)
		}
		u.trust = strings.TrimPrefix(clitest.TrustDirAs(t, u.root, uid), "LOCKLEDGER_TRUST_DIR=")
		return u
	}
	// as runs the CLI as u on database db and returns what it did.
	as := func(u *fleetUser, db string, args ...string) clitest.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		dbURL := url.URL{Scheme: "postgres", User: url.User(u.role), Host: c.TCPAddr(), Path: "/" + db, RawQuery: "sslmode=disable"}
		cmd.Env = append(clitest.Env(u.root, "LOCKLEDGER_TRUST_DIR="+u.trust), "HOME="+u.root,
			"LOCKLEDGER_DATABASE_URL="+dbURL.String(), ledger.HostIDEnv+"="+u.id,
			"LOCKLEDGER_CHECKPOINT_INTERVAL="+interval.String())
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.uid), Groups: []uint32{}}}
		return clitest.Exec(t, cmd)
	}
	run := func(u *fleetUser, want int, args ...string) clitest.Result {
		t.Helper()
		r := as(u, name, args...)
		if r.Code != want {
			t.Fatalf("%s (uid %d, role %s): lockledger %s: exit %d, want %d\nstdout: %s\nstderr: %s",
				u.id, u.uid, u.role, strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
		}
		return r
	}
	seq := func(q string) int64 {
		t.Helper()
		db, err := sql.Open("pgx", c.SocketURL(name))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int64
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}

	hosts := make([]*fleetUser, 4)
	for i := range hosts {
		role := writerRole
		if i == 0 {
			role = pgtest.Superuser // the database's owner
		}
		hosts[i] = newUser("fleet-"+string(rune('a'+i)), fleetOwnerUID+i, role)
	}
	owner := hosts[0]
	var shown struct {
		VerifierKey string `json:"verifier_key"`
		Pins        []struct {
			LedgerID string `json:"ledger_id"`
		} `json:"pins"`
	}
	keys := make([]string, len(hosts))
	var ledgerID string
	showKey := func(u *fleetUser) string {
		t.Helper()
		shown.VerifierKey, shown.Pins = "", nil
		if err := json.Unmarshal([]byte(run(u, 0, "trust", "show", "--json").Stdout), &shown); err != nil || shown.VerifierKey == "" || len(shown.Pins) == 0 {
			t.Fatalf("%s: trust show: %v %+v", u.id, err, shown)
		}
		return shown.VerifierKey
	}
	// The owner's first write makes the tables; then it grants the
	// writer and auditor roles what docs/postgresql.md grants them.
	run(owner, 0, "run", "job-"+owner.id, "--", "true")
	keys[0], ledgerID = showKey(owner), shown.Pins[0].LedgerID
	readme, err := os.ReadFile("../docs/postgresql.md")
	if err != nil {
		t.Fatal(err)
	}
	ownerDB, err := sql.Open("pgx", c.SocketURL(name))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pgtest.READMERoles(t, string(readme)) {
		s = strings.NewReplacer("lockledger_writer", writerRole, "lockledger_auditor", auditorRole).Replace(s)
		if _, err := ownerDB.Exec(s); err != nil {
			t.Fatalf("PostgreSQL page's set-up %q: %v", s, err)
		}
	}
	ownerDB.Close()
	t.Cleanup(func() {
		// After the copies are dropped (cleanups run last first), and
		// before this database is.
		if db, err := sql.Open("pgx", c.SocketURL(name)); err == nil {
			for _, r := range []string{writerRole, auditorRole} {
				db.Exec(`DROP OWNED BY ` + r)
				db.Exec(`DROP ROLE ` + r)
			}
			db.Close()
		}
	})
	for i, h := range hosts[1:] {
		run(h, 0, "run", "job-"+h.id, "--", "true") // makes the host's key and pins the ledger
		keys[i+1] = showKey(h)
		if shown.Pins[0].LedgerID != ledgerID {
			t.Fatalf("%s pinned ledger %s, the owner %s", h.id, shown.Pins[0].LedgerID, ledgerID)
		}
	}
	for i, h := range hosts[1:] {
		run(owner, 0, "signer", "add", keys[i+1], "--role", "host")
		run(h, 0, "trust", "pin", "--ledger-id", ledgerID, "--verifier-key", keys[0])
	}
	list := run(owner, 0, "signer", "list", "--keys").Stdout
	if got := strings.Count(strings.TrimSpace(list), "\n") + 1; got != 4 {
		t.Fatalf("signer list --keys: %d keys, want 4:\n%s", got, list)
	}
	// A host whose key the owner does not register only appends: it
	// stores no checkpoint, so it promises nothing it could not keep. It
	// joins a ledger that registers signers: it pins the owner's key
	// before its first write, which it trusts the registrations through.
	appender := newUser("fleet-appender", fleetOwnerUID+len(hosts), writerRole)
	run(appender, 0, "trust", "pin", "--ledger-id", ledgerID, "--verifier-key", keys[0])
	run(appender, 0, "run", "job-"+appender.id, "--", "true")
	appenderKey, err := cp.NewVerifier(showKey(appender))
	if err != nil {
		t.Fatal(err)
	}

	// A steal on one host of another's holding, which every head kept
	// from here on covers.
	run(hosts[1], 0, "acquire", "app", "--actor", "victim", "--pid", "0", "--ttl", "1h")
	run(hosts[2], 0, "steal", "app", "--active", "--actor", "thief", "--pid", "0", "--ttl", "1h", "--yes", "--reason", "covered by every head")
	stealSeq := seq(`SELECT max(seq) FROM events WHERE type = 'lock_stolen'`)
	idle := hosts[3]
	run(idle, 0, "run", "last-of-"+idle.id, "--", "true") // signs a checkpoint, and its promise
	idleHead := seq(`SELECT max(seq) FROM events`)
	// The others write for longer than the interval the idle host promised.
	start := time.Now()
	for n := 0; time.Since(start) < 2*interval || n < 6; n++ {
		run([]*fleetUser{hosts[1], hosts[2], appender}[n%3], 0, "run", "busy", "--", "true")
	}
	// A registered host writes last: the appender's last events, dated
	// past the interval after the last checkpoint when a loaded machine
	// slows the loop, are covered by the checkpoint this write signs.
	run(hosts[1], 0, "run", "busy", "--", "true")
	fleetDB, err := sql.Open("pgx", c.SocketURL(name))
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
	// The prune's boundary: the end of a stored checkpoint past the steal
	// and within the idle host's head, so every kept head covers the range.
	pruneBelow := seq(`SELECT coalesce(max(size), 0) + 1 FROM checkpoints WHERE size >= ` +
		strconv.FormatInt(stealSeq, 10) + ` AND size <= ` + strconv.FormatInt(idleHead, 10))
	if pruneBelow == 1 {
		t.Fatalf("no checkpoint between the steal (seq %d) and the idle host's head (seq %d)", stealSeq, idleHead)
	}

	hosts = append(hosts, appender)
	// Every host's verify records it and keeps a head past this seq.
	unverified := seq(`SELECT max(seq) FROM events`)
	for _, h := range hosts {
		if r := run(h, 0, "verify"); !strings.Contains(r.Stdout, "verify: OK") {
			t.Fatalf("%s: verify: %s", h.id, r.Stdout)
		}
	}
	auditor := newUser("auditor", fleetAuditorUID, auditorRole)
	signers := filepath.Join(dir, "signers")
	if err := os.WriteFile(signers, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	verifies := `SELECT count(*) FROM events WHERE type = 'ledger_verified'`
	recorded := seq(verifies)
	r := run(auditor, 0, "verify", "--signers", signers)
	if !strings.Contains(r.Stdout, "verify: OK") || strings.Contains(r.Stderr, "unsigned") {
		t.Fatalf("auditor's verify --signers: %s\n%s", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(auditor.trust, "signing.key")); err == nil {
		t.Errorf("the auditor's verify made a signing key of its own")
	}
	if n := seq(verifies); n != recorded {
		t.Errorf("the auditor's read-only role recorded its verify: %d ledger_verified events, %d before", n, recorded)
	}

	// Each tampering on a copy of the database (one ledger id, so each
	// host's pin and head apply), checked on every host, each host with
	// its trust store and root as they were here: a verify of one copy
	// keeps a head of that copy (and pins it in the root), which would
	// fail the next copy's on its own.
	var kept []string
	for _, u := range append(hosts[:len(hosts):len(hosts)], auditor) {
		kept = append(kept, u.trust, u.root)
	}
	for _, d := range kept {
		if out, err := exec.Command("cp", "-a", d, d+".kept").CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v\n%s", d, err, out)
		}
	}
	mallory := newUser("mallory", malloryUID, pgtest.Superuser)
	for _, tc := range []struct {
		name string
		sql  string
		// by tampers as mallory on database db, returning the seq verify
		// must name (0: any failure).
		by func(db string) int64
	}{
		{name: "rewrite", sql: `UPDATE events SET actor = 'mallory', body = convert_to(replace(convert_from(body, 'UTF8'), '"actor":"', '"actor":"x'), 'UTF8') WHERE seq = 3`},
		// The tail every host's kept head covers: their verifies.
		{name: "cut", sql: strings.ReplaceAll(`DELETE FROM checkpoints WHERE size > UNVERIFIED;
			DELETE FROM tlog_hashes WHERE seq > UNVERIFIED; DELETE FROM events WHERE seq > UNVERIFIED`,
			"UNVERIFIED", strconv.FormatInt(unverified, 10))},
		{name: "deleted range", sql: `DELETE FROM tlog_hashes WHERE seq BETWEEN 4 AND 6; DELETE FROM events WHERE seq BETWEEN 4 AND 6`},
		{name: "pruned range", by: func(db string) int64 {
			// Mallory signs with a key of her own, pins the fleet's
			// (public) signer keys so that the archive's checkpoint
			// verifies, archives the start of the log, prunes it and
			// deletes the archive.
			files := filepath.Join(dir, "mallory-files")
			if err := os.Mkdir(files, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(files, mallory.uid, mallory.uid); err != nil {
				t.Fatal(err)
			}
			arch := filepath.Join(files, "old.jsonl")
			key := filepath.Join(files, "mallory.key")
			steps := [][]string{{"keygen", "--name", "mallory", "-o", key}}
			for _, k := range keys {
				steps = append(steps, []string{"trust", "pin", "--ledger-id", ledgerID, "--verifier-key", k})
			}
			for _, args := range append(steps,
				[]string{"archive", "--below", strconv.FormatInt(pruneBelow, 10), "-o", arch}) {
				if r := as(mallory, db, args...); r.Code != 0 {
					t.Fatalf("mallory: %v: exit %d\n%s%s", args, r.Code, r.Stdout, r.Stderr)
				}
			}
			r := as(mallory, db, "--unsigned", "--signing-key", key, "prune", "--archive", arch)
			m := regexp.MustCompile(`recorded: ledger_pruned, seq (\d+)`).FindStringSubmatch(r.Stdout)
			if r.Code != 0 || m == nil || !strings.Contains(r.Stdout, "pruned seq 1-"+strconv.FormatInt(pruneBelow-1, 10)+" ") {
				t.Fatalf("mallory's prune: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			if err := os.Remove(arch); err != nil {
				t.Fatal(err)
			}
			// A host's next write signs the log with the marker in it.
			if r := as(hosts[1], db, "run", "after-the-prune", "--", "true"); r.Code != 0 {
				t.Fatalf("%s's write after the prune: exit %d\n%s", hosts[1].id, r.Code, r.Stderr)
			}
			marker, _ := strconv.ParseInt(m[1], 10, 64)
			return marker
		}},
	} {
		copyName := name + "_" + strings.ReplaceAll(tc.name, " ", "_")
		if _, err := admin.Exec(`CREATE DATABASE "` + copyName + `" TEMPLATE "` + name + `"`); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Exec(`DROP DATABASE IF EXISTS "` + copyName + `" WITH (FORCE)`) })
		for _, d := range kept {
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("cp", "-a", d+".kept", d).CombinedOutput(); err != nil {
				t.Fatalf("cp -a %s: %v\n%s", d, err, out)
			}
		}
		var named int64
		if tc.by != nil {
			named = tc.by(copyName)
		} else {
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
		}
		checkers := hosts
		if tc.name != "cut" {
			// The auditor keeps no head: a tail cut with its checkpoints
			// is seen only by a head from outside (--checkpoint).
			checkers = append(checkers[:len(checkers):len(checkers)], auditor)
		}
		for _, h := range checkers {
			// Below the heads the verifies above kept: the whole log.
			args := []string{"verify", "--json", "--full"}
			if h == auditor {
				args = append(args, "--signers", signers)
			}
			r := as(h, copyName, args...)
			if r.Code != 1 {
				t.Errorf("%s: %s (uid %d, role %s): verify: exit %d, want 1\n%s\n%s", tc.name, h.id, h.uid, h.role, r.Code, r.Stdout, r.Stderr)
				continue
			}
			if named == 0 {
				continue
			}
			found := false
			for _, p := range clitest.DecodeVerify(t, r).Problems {
				found = found || p.Seq == named
			}
			if !found {
				t.Errorf("%s: %s: verify names no problem at the marker's seq %d\n%s", tc.name, h.id, named, r.Stdout)
			}
		}
	}
}
