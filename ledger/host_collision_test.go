package ledger_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/internal/proc"
	"github.com/lockledger/lockledger/internal/testlog"
	"github.com/lockledger/lockledger/ledger"
)

// The keys of two machines (proc.MachineKey) that share one host id.
const machineA, machineB = "0123456789abcdef", "fedcba9876543210"

// asREADMEWriter has f's PostgreSQL ledger created by its owner, runs the
// README's role block on it (the roles named for the database, since roles
// are the cluster's) and points f at the writer role, so that the hosts
// write as a fleet's do. A SQLite fixture is left as it is.
func asREADMEWriter(t *testing.T, f *storeFixture) {
	t.Helper()
	if f.url == "" {
		return
	}
	owner, err := ledger.Open(context.Background(), t.TempDir(), ledger.WithDatabase(f.url),
		ledger.WithHost(ledger.Host{ID: "owner", BootID: "boot-owner"}), ledger.Unsigned())
	if err != nil {
		t.Fatal(err)
	}
	owner.Close()
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	suffix := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(u.Path, "/"), "-", "_"))
	writer, auditor := "w_"+suffix, "a_"+suffix
	db, err := sql.Open("pgx", f.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range []string{writer, auditor} {
			db.Exec(`DROP OWNED BY ` + r)
			db.Exec(`DROP ROLE ` + r)
		}
		db.Close()
	})
	readme, err := os.ReadFile("../docs/postgresql.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range pgtest.READMERoles(t, string(readme)) {
		q = strings.NewReplacer("lockledger_writer", writer, "lockledger_auditor", auditor).Replace(q)
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("PostgreSQL page's set-up %q: %v", q, err)
		}
	}
	u.User = url.User(writer)
	f.url = u.String()
	w, err := sql.Open("pgx", f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var user string
	if err := w.QueryRow(`SELECT current_user`).Scan(&user); err != nil || user != writer {
		t.Fatalf("connected as %q (%v), want the writer role %s", user, err, writer)
	}
}

func acquireDeploy(l *ledger.Ledger, rid string) (*ledger.Acquisition, error) {
	return l.TryAcquire(context.Background(), ledger.AcquireRequest{Lock: "deploy", TTL: time.Hour,
		Identity: ledger.Identity{RequestID: rid, Actor: "t", PID: os.Getpid()}})
}

// TestHostIDCollisionKeepsTheLiveHolderOfAnotherMachine: two machines
// under one host id have different boot ids; the second must not take the
// first's live holder for one of a boot gone by. It judges it by TTL, and
// warns. A reboot of the first machine still finds its holder dead. On
// PostgreSQL every host writes as the README's writer role.
func TestHostIDCollisionKeepsTheLiveHolderOfAnotherMachine(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		asREADMEWriter(t, f)
		a := f.openAs(ledger.Host{ID: "web", BootID: proc.JoinBoot(machineA, "boot-a1")})
		if _, err := acquireDeploy(a, "r1"); err != nil {
			t.Fatal(err)
		}
		var log testlog.Buffer
		b := f.openAs(ledger.Host{ID: "web", BootID: proc.JoinBoot(machineB, "boot-b1")},
			ledger.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
		var held *ledger.HeldError
		if got, err := acquireDeploy(b, "r2"); !errors.As(err, &held) {
			t.Fatalf("the other machine's acquire: %+v, %v; want a HeldError (the holder is alive on its machine)", got, err)
		}
		if !strings.Contains(log.String(), "two machines write under one host id") || !strings.Contains(log.String(), machineA+"/boot-a1") {
			t.Errorf("no warning of the shared host id: %q", log.String())
		}
		// A clone of the first machine (the same machine id) that booted
		// before the holder's last heartbeat: not a reboot of it.
		var clonelog testlog.Buffer
		clone := f.openAs(ledger.Host{ID: "web", BootID: proc.JoinBoot(machineA, "boot-c1"), Booted: time.Now().Add(-time.Hour)},
			ledger.WithLogger(slog.New(slog.NewTextHandler(&clonelog, nil))))
		if got, err := acquireDeploy(clone, "r2c"); !errors.As(err, &held) {
			t.Fatalf("a clone's acquire: %+v, %v; want a HeldError (the holder was seen after the clone booted)", got, err)
		}
		if !strings.Contains(clonelog.String(), "two machines write under one host id") {
			t.Errorf("no warning of the clone: %q", clonelog.String())
		}
		rebooted := f.openAs(ledger.Host{ID: "web", BootID: proc.JoinBoot(machineA, "boot-a2"), Booted: time.Now().Add(time.Minute)})
		if got, err := acquireDeploy(rebooted, "r3"); err != nil || got.Reason != events.ReasonHolderDead {
			t.Fatalf("after the first machine rebooted: %+v, %v; want its old holder dead", got, err)
		}
		verifyOK(t, rebooted)
	})
}

// TestHolderOfAnUnknownMachine: a holder recorded before machines were
// (a bare boot id) under this host id, of another boot: on ROOT/ledger.db,
// which one machine writes, this host rebooted; on a database many hosts
// share it may be another machine, and only its TTL ends it (the hosts
// write there as the README's writer role).
func TestHolderOfAnUnknownMachine(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, f *storeFixture) {
		asREADMEWriter(t, f)
		old := f.openAs(ledger.Host{ID: "web", BootID: "boot-old"})
		if _, err := acquireDeploy(old, "r1"); err != nil {
			t.Fatal(err)
		}
		now := f.openAs(ledger.Host{ID: "web", BootID: proc.JoinBoot(machineA, "boot-new")})
		got, err := acquireDeploy(now, "r2")
		var held *ledger.HeldError
		switch f.kind {
		case "sqlite":
			if err != nil || got.Reason != events.ReasonHolderDead {
				t.Fatalf("on SQLite: %+v, %v; want the holder of the old boot dead", got, err)
			}
		default:
			if !errors.As(err, &held) {
				t.Fatalf("on PostgreSQL: %+v, %v; want a HeldError (judged by TTL only)", got, err)
			}
		}
	})
}
