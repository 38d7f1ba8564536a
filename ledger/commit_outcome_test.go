package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/pgtest"
)

// commitMessage is the COMMIT a transaction of the ledger ends with, as pgx
// sends it: a simple query message.
var commitMessage = []byte("Q\x00\x00\x00\x0bcommit\x00")

// A commit whose reply is lost (the connection is reset once COMMIT has
// reached the server, which commits) is a commit: the caller is told the
// lock is its own, and this host's lock file says so, as the log does; so
// too when the database refuses connections for a while after (a restart
// that ended the session at its COMMIT): the read-back is tried again. One
// whose outcome cannot be read back within twice the busy timeout (the
// database out of reach from that moment) is reported as unknown
// (ErrCommitUnknown), never as a failure, since the event may well be
// recorded. Through PgBouncer too.
func TestPostgresCommitReplyLost(t *testing.T) {
	for _, after := range []string{"reachable", "back after a refusal", "unreachable"} {
		for _, bounced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bounced=%v", after, bounced), func(t *testing.T) {
				commitReplyLost(t, after, bounced)
			})
		}
	}
}

// commitReplyLost is TestPostgresCommitReplyLost's case of the database
// after the lost reply (reachable, back after refusing the read-back's
// first connection, unreachable), directly or through PgBouncer.
func commitReplyLost(t *testing.T, after string, bounced bool) {
	name := pgtest.CreateDatabase(t)
	// Through PgBouncer in transaction mode, the proxy is between
	// the ledger and PgBouncer, which then loses its client.
	target := pgtest.TCPAddr(t)
	if bounced {
		target = "127.0.0.1:" + strconv.Itoa(pgtest.GetBouncer(t).Port)
	}
	proxy := pgtest.NewProxy(t, target)
	root := t.TempDir()
	ctx := context.Background()
	busy := 10 * time.Second
	if after == "unreachable" {
		busy = time.Second // the read-back gives up after twice that
	}
	l, err := Open(ctx, root, WithDatabase(proxy.URL(name)), Unsigned(), WithBusyTimeout(busy))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reachable := after != "unreachable"
	proxy.LoseReplyTo(commitMessage, after != "reachable")
	back := make(chan struct{})
	go func() {
		defer close(back)
		if after != "back after a refusal" {
			return
		}
		for deadline := time.Now().Add(20 * time.Second); proxy.Refused() == 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		proxy.Restore()
	}()
	acq, err := l.TryAcquire(ctx, AcquireRequest{Lock: "lost-reply", Identity: Identity{Actor: "commit-review"}})
	<-back
	if n := proxy.RepliesLost(); n != 1 {
		t.Fatalf("the proxy lost %d replies to COMMIT, want 1 (err %v)", n, err)
	}
	if after == "back after a refusal" && proxy.Refused() == 0 {
		t.Fatal("the proxy refused no connection after the lost reply")
	}
	proxy.Restore()
	// What the database holds, read beside the proxy: the ledger's
	// pool may still hand out a connection the proxy cut. Unreachable,
	// nothing waited for the server to finish the commit it was sent.
	db := pgtest.Open(t, pgtest.TCPURL(t, name))
	recorded := func() (seqs []int64) {
		rows, err := db.Query(`SELECT seq FROM events WHERE lock_name = 'lost-reply' ORDER BY seq`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, seq)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	seqs := recorded()
	for deadline := time.Now().Add(10 * time.Second); len(seqs) == 0 && time.Now().Before(deadline); seqs = recorded() {
		time.Sleep(10 * time.Millisecond)
	}
	if len(seqs) != 1 {
		t.Fatalf("%d events of the acquire whose COMMIT reached the server, want 1", len(seqs))
	}
	_, statErr := os.Stat(filepath.Join(root, "locks", "lost-reply.lock"))
	if reachable {
		if err != nil {
			t.Fatalf("an acquire recorded at seq %d was told it failed: %v", seqs[0], err)
		}
		if acq.Seq != seqs[0] {
			t.Errorf("acquired at seq %d, recorded at %d", acq.Seq, seqs[0])
		}
		if statErr != nil {
			t.Errorf("the lock file of a committed acquire: %v", statErr)
		}
		return
	}
	if !errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("an acquire recorded at seq %d whose commit could not be read back was told %v, want ErrCommitUnknown", seqs[0], err)
	}
}

// A commit whose reply is lost as the server restarts (the COMMIT made,
// then a fast shutdown and a start) is read back once the server is up
// again, within the read-back's bound: the caller is told the lock is its
// own, as the log says, and not that the outcome is unknown.
func TestPostgresCommitReplyLostWhileTheServerRestarts(t *testing.T) {
	c := pgtest.Private(t)
	if err := c.CreateDatabase("restarted"); err != nil {
		t.Fatal(err)
	}
	proxy := pgtest.NewProxy(t, c.TCPAddr())
	ctx := context.Background()
	l, err := Open(ctx, t.TempDir(), WithDatabase(proxy.URL("restarted")), Unsigned(), WithBusyTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Read beside the proxy, which from the lost reply on lets nothing
	// through until the server is down; then it is started again.
	db := pgtest.Open(t, c.SocketURL("restarted"))
	db.SetMaxIdleConns(0) // none kept across the restart
	recorded := func() (seq int64, err error) {
		err = db.QueryRow(`SELECT coalesce(max(seq), 0) FROM events WHERE lock_name = 'restarted'`).Scan(&seq)
		return seq, err
	}
	proxy.LoseReplyTo(commitMessage, true)
	restarted := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if seq, err := recorded(); err != nil || seq > 0 {
				if err == nil {
					err = c.Down(pgtest.Fast)
				}
				if err != nil {
					restarted <- err
					return
				}
				break
			}
			if time.Now().After(deadline) {
				restarted <- errors.New("the acquire was not committed within a minute")
				return
			}
		}
		proxy.Restore()
		restarted <- c.Up()
	}()
	acq, err := l.TryAcquire(ctx, AcquireRequest{Lock: "restarted", Identity: Identity{Actor: "commit-review"}})
	if rerr := <-restarted; rerr != nil {
		t.Fatal(rerr)
	}
	if n := proxy.RepliesLost(); n != 1 {
		t.Fatalf("the proxy lost %d replies to COMMIT, want 1 (err %v)", n, err)
	}
	seq, rerr := recorded()
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil || acq.Seq != seq {
		t.Fatalf("an acquire recorded at seq %d whose COMMIT reply was lost as the server restarted was told %+v, %v", seq, acq, err)
	}
}

// A commit the database refuses (here a deferred constraint trigger that
// raises at COMMIT) is a failure with nothing recorded, as before the
// read-back: not unknown, not a success.
func TestPostgresCommitRefusedIsAFailure(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	root := t.TempDir()
	ctx := context.Background()
	l, err := Open(ctx, root, WithDatabase(pgtest.TCPURL(t, name)), Unsigned(), WithBusyTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	db := pgtest.Open(t, pgtest.TCPURL(t, name))
	for _, q := range []string{
		`CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit by the test'; END $$`,
		`CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
			WHEN (NEW.lock_name = 'refused-commit') EXECUTE FUNCTION refuse_at_commit()`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.TryAcquire(ctx, AcquireRequest{Lock: "refused-commit", Identity: Identity{Actor: "commit-review"}})
	if err == nil || errors.Is(err, ErrCommitUnknown) || !strings.Contains(err.Error(), "refused at commit by the test") {
		t.Fatalf("an acquire whose commit the database refused was told %v, want the database's refusal", err)
	}
	if evs := lockEvents(t, l, "refused-commit"); len(evs) != 0 {
		t.Fatalf("%d events of an acquire whose commit was refused", len(evs))
	}
	if _, err := os.Stat(filepath.Join(root, "locks", "refused-commit.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file of an acquire whose commit was refused: %v", err)
	}
}

// A checkpoint alone (lockledger checkpoint: no event appended) whose
// commit's reply is lost is read back by its checkpoint row: the caller is
// told it signed it when the database committed it, and unknown only when
// the database cannot be read back.
func TestPostgresCheckpointCommitReplyLost(t *testing.T) {
	for _, reachable := range []bool{true, false} {
		t.Run(map[bool]string{true: "read-back", false: "unreachable"}[reachable], func(t *testing.T) {
			name := pgtest.CreateDatabase(t)
			proxy := pgtest.NewProxy(t, pgtest.TCPAddr(t))
			ctx := context.Background()
			s, _ := testKey(t)
			busy := 10 * time.Second
			if !reachable {
				busy = time.Second // the read-back gives up after twice that
			}
			l, err := Open(ctx, t.TempDir(), WithDatabase(proxy.URL(name)), Unsigned(), WithSigner(s),
				WithCheckpointPolicy(1000, time.Hour), WithBusyTimeout(busy))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "signed", Identity: Identity{Actor: "commit-review"}}); err != nil {
				t.Fatal(err)
			}
			db := pgtest.Open(t, pgtest.TCPURL(t, name))
			var head int64
			var before int
			if err := db.QueryRow(`SELECT (SELECT max(seq) FROM events), (SELECT count(*) FROM checkpoints)`).Scan(&head, &before); err != nil {
				t.Fatal(err)
			}
			proxy.LoseReplyTo(commitMessage, !reachable)
			cp, err := l.Checkpoint(ctx)
			if n := proxy.RepliesLost(); n != 1 {
				t.Fatalf("the proxy lost %d replies to COMMIT, want 1 (err %v)", n, err)
			}
			proxy.Restore()
			// Unreachable, nothing waited for the server to finish the
			// commit it was sent.
			var after int
			for deadline := time.Now().Add(10 * time.Second); after <= before && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if err := db.QueryRow(`SELECT count(*) FROM checkpoints`).Scan(&after); err != nil {
					t.Fatal(err)
				}
			}
			if after != before+1 {
				t.Fatalf("%d checkpoints after the one whose COMMIT reached the server, want %d", after, before+1)
			}
			if !reachable {
				want := fmt.Sprintf("the checkpoint of %d events is stored", head)
				if !errors.Is(err, ErrCommitUnknown) || !strings.Contains(err.Error(), want) {
					t.Fatalf("a checkpoint stored whose commit could not be read back was told %v, want ErrCommitUnknown saying %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("a checkpoint stored was told it failed: %v", err)
			}
			if cp == nil || cp.Size != head {
				t.Fatalf("checkpoint %+v, want the one of %d events", cp, head)
			}
		})
	}
}

// On SQLite a commit's answer cannot be lost (the database is in this
// process), but its commit can fail: here a deferred foreign key, which a
// trigger another program added breaks, refuses it at COMMIT, and SQLite
// keeps the transaction open. The read-back finds no event: a failure
// with nothing recorded, not unknown, and the writers after it get
// through.
func TestSQLiteCommitRefusedIsAFailure(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	l, err := Open(ctx, root, Unsigned(), WithBusyTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	db := rawDB(t, root)
	for _, q := range []string{
		`CREATE TABLE refuse_parent (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE refuse_child (parent INTEGER REFERENCES refuse_parent (id) DEFERRABLE INITIALLY DEFERRED)`,
		`CREATE TRIGGER refuse_at_commit AFTER INSERT ON events WHEN NEW.lock_name = 'refused-commit'
			BEGIN INSERT INTO refuse_child VALUES (1); END`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.TryAcquire(ctx, AcquireRequest{Lock: "refused-commit", Identity: Identity{Actor: "commit-review"}})
	if err == nil || errors.Is(err, ErrCommitUnknown) || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("an acquire whose commit SQLite refused was told %v, want SQLite's refusal", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE lock_name = 'refused-commit'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d events of an acquire whose commit was refused (%v)", n, err)
	}
	if _, err := os.Stat(filepath.Join(root, "locks", "refused-commit.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock file of an acquire whose commit was refused: %v", err)
	}
	if _, err := l.TryAcquire(ctx, AcquireRequest{Lock: "after", Identity: Identity{Actor: "commit-review"}}); err != nil {
		t.Fatalf("a write after the refused commit: %v", err)
	}
}

// The read-backs of many hosts whose commits' replies one failover lost
// do not retry in step: each wait is drawn below its delay, not the delay.
func TestReadBackWaitsAreJittered(t *testing.T) {
	retry := readBackRetry
	for i, delay := 0, readBackRetry.Min; i < 8; i, delay = i+1, min(2*delay, readBackRetry.Max) {
		if got := retry.Next(); got < 0 || got >= delay {
			t.Fatalf("read-back wait %d: %s, want in [0, %s) so that hosts do not retry in step", i, got, delay)
		}
	}
}
