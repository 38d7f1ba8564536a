package jepsen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/fence"
	"github.com/lockledger/lockledger/ledger"
)

// The environment of a JOB that writes through a fence.
const (
	envFence = "JEPSEN_FENCE" // fencePostgres or fenceFile; unset: no fenced writes
	envRoot  = "JEPSEN_ROOT"  // the job's host's root, where a refusal is recorded
	envBin   = "JEPSEN_BIN"   // the lockledger CLI, whose detached recorder records a refusal
)

const (
	fencePostgres = "postgres" // a row per write in the trial's table, fenced by fence.PostgresSQL's trigger
	fenceFile     = "file"     // a line per write in the trial's file, through fence.WriteFile
)

// fenceOrderSQL numbers the rows of a fenced table in the order the fence
// accepted them. It runs in a trigger that fires after lockledger_fence
// (triggers fire in the order of their names), so under the fence's lock
// of the resource's row, held until the writer's commit: a bigserial
// column would take its number before that lock, in another order.
const fenceOrderSQL = `CREATE SEQUENCE IF NOT EXISTS jepsen_fence_order;
CREATE OR REPLACE FUNCTION jepsen_fence_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.seq := nextval('jepsen_fence_order');
    RETURN NEW;
END
$$;`

// fencedTable is the table the jobs of the trial on lock write to.
func fencedTable(lock string) pgx.Identifier { return pgx.Identifier{"fenced_" + lock} }

// fencedFile is the file the jobs of the trial whose record is at record
// write to, on SQLite.
func fencedFile(record string) string { return record + ".fenced" }

// installFence makes the fence and the order trigger's function in a
// worker's database, once.
func installFence(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, fence.PostgresSQL); err != nil {
		return fmt.Errorf("installing the fence: %w", err)
	}
	if _, err := conn.Exec(ctx, fenceOrderSQL); err != nil {
		return fmt.Errorf("installing the fence's order: %w", err)
	}
	return nil
}

// createFenced makes the trial's fenced table: its own resource, so that
// a trial's tokens meet only its own.
func createFenced(ctx context.Context, conn *pgx.Conn, lock string) error {
	t := fencedTable(lock)
	for _, q := range []string{
		"CREATE TABLE " + t.Sanitize() + " (seq bigint NOT NULL, fencing_token bigint NOT NULL, request text NOT NULL, mono bigint NOT NULL)",
		fence.AttachSQL(t, ""),
		"CREATE TRIGGER zz_jepsen_order BEFORE INSERT ON " + t.Sanitize() + " FOR EACH ROW EXECUTE FUNCTION jepsen_fence_order()",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("creating the fenced table: %w", err)
		}
	}
	return nil
}

// FencedWrite is one write a fence accepted.
type FencedWrite struct {
	Token   int64
	Request string
}

// readFenced reads the writes the fence accepted in the trial, in the
// order it accepted them.
func readFenced(ctx context.Context, conn *pgx.Conn, lock string) ([]FencedWrite, error) {
	rows, err := conn.Query(ctx, "SELECT fencing_token, request FROM "+fencedTable(lock).Sanitize()+" ORDER BY seq")
	if err != nil {
		return nil, err
	}
	var out []FencedWrite
	for rows.Next() {
		var w FencedWrite
		if err := rows.Scan(&w.Token, &w.Request); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// readFencedFile reads the file fence's writes, a line each, in the order
// they were accepted.
func readFencedFile(path string) ([]FencedWrite, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var out []FencedWrite
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil, fmt.Errorf("fenced file %s: line %q: want 3 fields", path, sc.Text())
		}
		tok, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("fenced file %s: line %q: %w", path, sc.Text(), err)
		}
		out = append(out, FencedWrite{Token: tok, Request: f[2]})
	}
	return out, sc.Err()
}

// fencer is a job's writer through the fence.
type fencer struct {
	kind    string
	token   int64
	request string
	conn    *pgx.Conn // postgres
	table   string    // postgres: the fenced table, sanitized
	path    string    // file
}

// openFencer opens the job's fence, when the harness asked for one.
func openFencer(kind, record string, token int64, request, lock string) (*fencer, error) {
	f := &fencer{kind: kind, token: token, request: request}
	switch kind {
	case "":
		return nil, nil
	case fenceFile:
		f.path = fencedFile(record)
		return f, nil
	case fencePostgres:
		cfg, err := pgx.ParseConfig(os.Getenv("LOCKLEDGER_DATABASE_URL"))
		if err != nil {
			return nil, err
		}
		// A name of its own: cut-db terminates the run's backends by
		// theirs, and the job's writes are the resource's, not the run's.
		cfg.RuntimeParams["application_name"] = "jepsen-fence-" + lock
		// A commit that does not wait for the WAL's flush: a write a tick
		// per holding job would otherwise add a hundred fsyncs a second to
		// the ledger's own on the shared disk. The fence's row lock and
		// what a commit makes visible are the same either way; only a
		// crash of the server could lose an acknowledged row.
		cfg.RuntimeParams["synchronous_commit"] = "off"
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if f.conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
			return nil, err
		}
		f.table = fencedTable(lock).Sanitize()
		return f, nil
	}
	return nil, fmt.Errorf("%s: %q is not %s or %s", envFence, kind, fencePostgres, fenceFile)
}

// write makes one write through the fence; a refusal is a *fence.StaleError
// (fence.AsStale).
func (f *fencer) write(mono int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if f.kind == fencePostgres {
		_, err := f.conn.Exec(ctx, "INSERT INTO "+f.table+" (fencing_token, request, mono) VALUES ($1, $2, $3)", f.token, f.request, mono)
		return err
	}
	// The file holds every accepted write, a line each: the job reads it
	// and writes it back with its own line added, under a lock of its own
	// around the fence's, so that no accepted line is lost to a racing
	// writer and the lines stay in the order the fence accepted them.
	order, err := os.OpenFile(f.path+".order", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer order.Close()
	if err := unix.Flock(int(order.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	old, err := os.ReadFile(f.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	line := fmt.Sprintf("%d %d %s\n", mono, f.token, f.request)
	return fence.WriteFile(ctx, f.path, f.token, bytes.NewReader(append(old, line...)))
}

// record has the refusal in err appended to the ledger as fence_rejected,
// as a fenced job must: the ledger's audit then has every write a fence
// refused. A detached recorder of the lockledger CLI writes it
// (fence.RecordDetached, in a session of its own), so that run, stopping
// this job for the lost lock (TERM, then KILL after its kill grace), does
// not lose it with the job. TERM waits until it is recorded.
func (f *fencer) record(lock string, err error) error {
	signal.Ignore(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), recordFor)
	defer cancel()
	return fence.RecordDetached(ctx, os.Getenv(envBin), []string{"--root", os.Getenv(envRoot)}, lock,
		ledger.Identity{RequestID: f.request, PID: os.Getpid()}, err)
}

// recordFor bounds a refusal's recorder; the trial's check waits for the
// recorders of its lock (awaitRecorders) up to it.
const recordFor = time.Minute

// awaitRecorders waits until no recorder of a refusal on lock runs (the
// ledger has what they record), for up to recordFor.
func awaitRecorders(lock string) {
	want := []byte("\x00--lock=" + lock + "\x00")
	deadline := time.Now().Add(recordFor)
	for time.Now().Before(deadline) {
		running := false
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
			if err == nil && bytes.Contains(b, []byte(fence.RecorderCommand+"\x00")) && bytes.Contains(b, want) {
				running = true
				break
			}
		}
		if !running {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (f *fencer) close() {
	if f != nil && f.conn != nil {
		f.conn.Close(context.Background())
	}
}
