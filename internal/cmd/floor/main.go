// Command floor is the floor of lockledger's own stack: what `lockledger
// run NAME -- CMD` cannot avoid doing, with the same SQLite driver, the
// same migrations, the same connection settings and rows of the same size,
// and nothing else. internal/cmd/bench times it alternated with the CLI,
// so that every CLI figure is a ratio to what our stack costs rather than
// to flock(1), which records nothing.
//
// One run: open the database, commit an event row (read the head, insert a
// ~600-byte row chained to it, with the table's indexes), write and fsync
// a lock file, run CMD and wait for it, commit a second row, exit. With
// -heads DIR every commit also signs the new head with Ed25519 (as
// lockledger signs, with crypto/ed25519) and keeps it in DIR
// (temporary file written and fsynced, renamed, directory fsynced): what
// signing by default adds, without the rest of our code.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite"

	"github.com/lockledger/lockledger/migrations"
)

// busyTimeout is ledger.DefaultBusyTimeout (floor_test.go checks the DSN).
const busyTimeout = 10 * time.Second

// dsn is store/sqlite's DSN(path, busyTimeout), written out here so that
// the floor links no package of ours but the migrations.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "wal_autocheckpoint(256)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// bodySize is about the size of an acquire event's body.
const bodySize = 600

func main() {
	dbPath := flag.String("db", "", "the database (made with -init)")
	lock := flag.String("lock", "", "the lock file to write")
	heads := flag.String("heads", "", "sign each commit's head and keep it in this directory")
	initOnly := flag.Bool("init", false, "create the database from the migrations and exit")
	flag.Parse()
	code, err := run(context.Background(), *dbPath, *lock, *heads, *initOnly, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		code = 1
	}
	// Out without closing the database, as lockledger does: closing the
	// last connection checkpoints the WAL into the database (more fsyncs);
	// the next open recovers the WAL instead, which wal_autocheckpoint
	// keeps small.
	os.Exit(code)
}

// run does one run and returns CMD's exit code; the database is left open.
func run(ctx context.Context, dbPath, lock, heads string, initOnly bool, argv []string) (int, error) {
	db, err := sql.Open("sqlite", dsn(dbPath))
	if err != nil {
		return 0, err
	}
	db.SetMaxOpenConns(1)
	if initOnly {
		defer db.Close()
		return 0, migrations.Apply(ctx, db, func() string { return time.Now().UTC().Format(time.RFC3339Nano) })
	}
	if len(argv) == 0 {
		return 0, fmt.Errorf("no command to run")
	}
	var key ed25519.PrivateKey
	if heads != "" {
		key = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	}
	req := "req_" + randHex(13)
	if err := commit(ctx, db, "lock_acquired", req, key, heads); err != nil {
		return 0, err
	}
	if err := writeLockFile(lock, req); err != nil {
		return 0, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := 0
	if err := cmd.Run(); err != nil {
		if cmd.ProcessState == nil {
			return 0, err
		}
		code = cmd.ProcessState.ExitCode()
	}
	if err := commit(ctx, db, "lock_released", req, key, heads); err != nil {
		return 0, err
	}
	return code, nil
}

// commit appends one event row chained to the head in one transaction,
// then, with a key, signs the new head and keeps it in heads.
func commit(ctx context.Context, db *sql.DB, typ, req string, key ed25519.PrivateKey, heads string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	prev := strings.Repeat("0", 64)
	if err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev); err != nil && err != sql.ErrNoRows {
		return err
	}
	seq++
	at := time.Now().UTC().Format(time.RFC3339Nano)
	body := eventBody(seq, typ, req, at)
	h := sha256.Sum256(append([]byte(prev), body...))
	hash := hex.EncodeToString(h[:])
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (seq, event_id, type, lock_name, request_id, actor, at, body, prev_hash, hash)
		VALUES (?,?,?,?,?,?,?,?,?,?)`, seq, randHex(13), typ, "bench", req, "floor", at, body, prev, hash); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if key == nil {
		return nil
	}
	return keepHead(heads, seq, hash, key)
}

// eventBody is a JSON body of bodySize bytes.
func eventBody(seq int64, typ, req, at string) []byte {
	b := fmt.Appendf(nil, `{"seq":%d,"type":%q,"lock":"bench","request_id":%q,"actor":"floor","at":%q,"pad":"`, seq, typ, req, at)
	for len(b) < bodySize-2 {
		b = append(b, 'x')
	}
	return append(b, '"', '}')
}

// keepHead signs a note of the head and replaces heads/head with it
// durably.
func keepHead(dir string, seq int64, hash string, key ed25519.PrivateKey) error {
	text := "lockledger floor\n" + strconv.FormatInt(seq, 10) + "\n" + hash + "\n"
	sig := ed25519.Sign(key, []byte(text))
	msg := text + "\n— floor " + base64.StdEncoding.EncodeToString(sig) + "\n"
	tmp, err := os.CreateTemp(dir, ".head.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(msg); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, "head")); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeLockFile writes the holder's record to path and fsyncs it.
func writeLockFile(path, req string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, `{"lock":"bench","request_id":%q,"pid":%d,"at":%q}`+"\n", req, os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
