package storagecheck_test

import (
	"slices"
	"testing"

	"github.com/lockledger/lockledger/internal/fixture"
	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/storagecheck"
)

// A trigger left in place whose function was replaced (a no-op instead of
// the refusal), or altered, no longer guards anything: that is damage.
func TestPostgresReplacedTriggerFunctionsAreDamage(t *testing.T) {
	l := fixture.OpenPostgres(t, pgtest.NewDatabase(t))
	got := triggerDamage(t, l, storagecheck.Postgres,
		`CREATE OR REPLACE FUNCTION lockledger_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN OLD;
END
$$`,
		`ALTER FUNCTION lockledger_events_append_or_restore() SECURITY DEFINER`,
		`DROP TRIGGER tlog_hashes_no_delete ON tlog_hashes`,
		`CREATE TRIGGER tlog_hashes_no_delete AFTER DELETE ON tlog_hashes FOR EACH ROW EXECUTE FUNCTION lockledger_tlog_delete()`)
	want := []string{
		`function lockledger_events_append_or_restore, which trigger events_no_replace on table events calls, is not the one the migrations define: it reads "CREATE OR REPLACE FUNCTION lockledger_events_append_or_restore() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $function$ BEGIN IF NEW.seq <> coalesce((SELECT max(seq) FROM events), 0) + 1 AND NOT EXISTS (SELECT 1 FROM prune_restore WHERE NEW.seq >= first_seq AND NEW.seq < below_seq AND marke"`,
		`function lockledger_refuse, which trigger checkpoints_no_delete on table checkpoints calls, is not the one the migrations define: it reads "CREATE OR REPLACE FUNCTION lockledger_refuse() RETURNS trigger LANGUAGE plpgsql AS $function$ BEGIN RETURN OLD; END $function$"`,
		`tlog_hashes_no_delete on table tlog_hashes is not the one the migrations create: it reads "CREATE TRIGGER tlog_hashes_no_delete AFTER DELETE ON tlog_hashes FOR EACH ROW EXECUTE FUNCTION lockledger_tlog_delete()"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
}
