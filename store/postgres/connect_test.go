package postgres

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A refused connection is one line: pgx writes each address it tried on a
// line of its own, which the command line would print as "\n\t" escapes.
// The error is still pgx's, and transient.
func TestRefusedConnectionIsOneLine(t *testing.T) {
	_, err := Connect(context.Background(), Config{URL: "postgres://127.0.0.1:1/x", PoolSize: 1, Wait: 5 * time.Second,
		Busy: time.Second, ReadOnly: true, Now: time.Now, Log: slog.New(slog.DiscardHandler)})
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || !Transient(err) {
		t.Fatalf("Connect: %v, want pgx's ConnectError, transient", err)
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\t") || !strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, "connection refused") {
		t.Fatalf("Connect: %q, want one line naming the address and the refusal", msg)
	}
}
