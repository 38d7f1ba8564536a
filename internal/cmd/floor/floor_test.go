package main

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/store/sqlite"
)

func TestDSNIsTheLedgers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a b", "ledger.db")
	if got, want := dsn(p), sqlite.DSN(p, ledger.DefaultBusyTimeout); got != want {
		t.Fatalf("the floor's DSN drifted from the ledger's:\n got %s\nwant %s", got, want)
	}
}

func TestARunCommitsTwoChainedRowsAndSignsEachHead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "floor.db")
	if _, err := run(ctx, db, "", "", true, nil); err != nil {
		t.Fatal(err)
	}
	heads := filepath.Join(dir, "heads")
	if err := os.Mkdir(heads, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, db, filepath.Join(dir, "lock"), heads, false, []string{"true"}); err != nil {
		t.Fatal(err)
	}
	h, err := sql.Open("sqlite", dsn(db))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var n, chained, size int
	if err := h.QueryRow(`SELECT count(*), sum(e.prev_hash = (SELECT hash FROM events p WHERE p.seq = e.seq - 1)), min(length(body)) FROM events e`).Scan(&n, &chained, &size); err != nil {
		t.Fatal(err)
	}
	if n != 2 || chained != 1 || size != bodySize {
		t.Fatalf("rows %d, chained %d, body %d bytes; want 2, 1, %d", n, chained, size, bodySize)
	}
	head, err := os.ReadFile(filepath.Join(heads, "head"))
	if err != nil {
		t.Fatalf("no head kept: %v", err)
	}
	text, sigLine, ok := strings.Cut(string(head), "\n\u2014 floor ")
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(sigLine, "\n"))
	pub := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	if !ok || err != nil || !strings.HasPrefix(text, "lockledger floor\n2\n") || !ed25519.Verify(pub, []byte(text), sig) {
		t.Fatalf("the kept head is not the second commit's, signed by the zero seed's key:\n%s", head)
	}
}
