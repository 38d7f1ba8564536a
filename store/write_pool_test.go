package store_test

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
)

// sentAmid is a real transaction whose statements are sent while amid
// runs: other writes of the process at the moment pgx takes a statement's
// arguments.
type sentAmid struct {
	*sql.Tx
	amid func()
}

func (s sentAmid) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s.amid()
	return s.Tx.ExecContext(ctx, query, args...)
}

// TestGroupWriteArgumentIsNoOtherWritesWhileSent: the pooled buffer a
// group's write argument is encoded into is the pool's again only once the
// statement has run. Other writes of the process that take the pool's
// encoders while the statement is sent leave what it stores as it was, in
// both of the ways a statement may be sent.
func TestGroupWriteArgumentIsNoOtherWritesWhileSent(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"", "simple_protocol"} {
		t.Run(cmp.Or(mode, "exec"), func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			if mode != "" {
				url += "&default_query_exec_mode=" + mode
			}
			db := pgtest.Open(t, url)
			if err := migrations.Postgres.Migrate(ctx, db, nil, func() string { return "" }); err != nil {
				t.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			every := make([]byte, 256)
			for i := range every {
				every[i] = byte(i)
			}
			q := sentAmid{tx, func() { store.UseWriteEncoders(4) }}
			const writes = 20
			for n := int64(1); n <= writes; n++ {
				body := append([]byte{byte(n)}, every...)
				if err := store.SendEvents(ctx, q, n, [][]byte{body}); err != nil {
					t.Fatalf("write %d: %v", n, err)
				}
				var got []byte
				if err := tx.QueryRowContext(ctx, `SELECT body FROM events WHERE seq = $1`, n).Scan(&got); err != nil {
					t.Fatalf("write %d: %v", n, err)
				}
				if !slices.Equal(got, body) {
					t.Fatalf("write %d stored the body %q, want %q", n, got, body)
				}
			}
		})
	}
}
