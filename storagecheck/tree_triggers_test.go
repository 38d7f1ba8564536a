package storagecheck_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/replay"
	"github.com/lockledger/lockledger/storagecheck"
)

// The triggers that refuse a REPLACE or an upsert of a Merkle row or a
// checkpoint, and a checkpoint beyond the log, are checked like the
// events' own: dropping one is damage on both engines.
func TestTheTreeTablesInsertTriggersAreChecked(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		got := triggerDamage(t, fixture.Open(t, ""), func(ctx context.Context, q replay.Querier, rep *replay.Report) error {
			return storagecheck.SQLite(ctx, q, false, rep)
		}, `DROP TRIGGER tlog_hashes_no_replace`, `DROP TRIGGER checkpoints_no_replace`, `DROP TRIGGER checkpoints_within_log`)
		want := []string{
			"checkpoints_no_replace on table checkpoints is missing (the migrations create it: CREATE TRIGGER checkpoints_no_replace BEFORE INSERT ON checkpoints)",
			"checkpoints_within_log on table checkpoints is missing (the migrations create it: CREATE TRIGGER checkpoints_within_log BEFORE INSERT ON checkpoints)",
			"tlog_hashes_no_replace on table tlog_hashes is missing (the migrations create it: CREATE TRIGGER tlog_hashes_no_replace BEFORE INSERT ON tlog_hashes)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		got := triggerDamage(t, fixture.OpenPostgres(t, pgtest.NewDatabase(t)), storagecheck.Postgres,
			`DROP TRIGGER tlog_hashes_no_replace ON tlog_hashes`, `ALTER TABLE checkpoints DISABLE TRIGGER checkpoints_no_replace`)
		want := []string{
			"checkpoints_no_replace on table checkpoints is disabled",
			"tlog_hashes_no_replace on table tlog_hashes is missing (the migrations create it)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
		}
	})
}
