package storagecheck_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockledger/lockledger/internal/pgtest"
	"github.com/lockledger/lockledger/ledger"
	"github.com/lockledger/lockledger/storagecheck"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// triggerDamage runs check on a new ledger, then again after tamper's
// statements, and returns the trigger problems of the second run (the
// first must find none).
func triggerDamage(t *testing.T, l *ledger.Ledger, check func(context.Context, store.Querier, *verify.Report) error, tamper ...string) []string {
	t.Helper()
	ctx := context.Background()
	rep := &verify.Report{}
	if err := check(ctx, l.DB(), rep); err != nil || rep.ProblemCount != 0 {
		t.Fatalf("a new ledger: %v, problems %+v", err, rep.Problems)
	}
	for _, q := range tamper {
		if _, err := l.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep = &verify.Report{}
	if err := check(ctx, l.DB(), rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		if p.Kind != verify.KindTrigger {
			t.Errorf("problem of kind %s, want only %s: %s", p.Kind, verify.KindTrigger, p.Detail)
		}
		got = append(got, p.Detail)
	}
	slices.Sort(got)
	return got
}

func open(t *testing.T, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), t.TempDir(), append(opts, ledger.Unsigned())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestSQLiteTriggersThatAreMissingAlteredOrAddedAreDamage(t *testing.T) {
	l := open(t)
	got := triggerDamage(t, l, func(ctx context.Context, q store.Querier, rep *verify.Report) error {
		return storagecheck.SQLite(ctx, q, false, rep)
	},
		`DROP TRIGGER events_no_delete`,
		`DROP TRIGGER checkpoints_no_update`,
		`CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT 1; END`,
		`CREATE TRIGGER zz_extra BEFORE UPDATE ON locks BEGIN SELECT 1; END`)
	want := []string{
		`checkpoints_no_update on table checkpoints is not the one the migrations create: it reads "CREATE TRIGGER checkpoints_no_update BEFORE UPDATE ON checkpoints BEGIN SELECT 1; END"`,
		`events_no_delete on table events is missing (the migrations create it: CREATE TRIGGER events_no_delete BEFORE DELETE ON events)`,
		`zz_extra on table locks was not created by the migrations: it reads "CREATE TRIGGER zz_extra BEFORE UPDATE ON locks BEGIN SELECT 1; END"`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
}

func TestPostgresTriggersThatAreMissingDisabledOrAddedAreDamage(t *testing.T) {
	l := open(t, ledger.WithDatabase(pgtest.NewDatabase(t)))
	got := triggerDamage(t, l, storagecheck.Postgres,
		`DROP TRIGGER events_no_delete ON events`,
		`ALTER TABLE events DISABLE TRIGGER events_no_update`,
		`CREATE TRIGGER zz_extra BEFORE UPDATE ON checkpoints FOR EACH ROW EXECUTE FUNCTION lockledger_refuse()`)
	want := []string{
		"events_no_delete on table events is missing (the migrations create it)",
		"events_no_update on table events is disabled",
		"zz_extra on table checkpoints was not created by the migrations",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trigger problems:\n got %q\nwant %q", got, want)
	}
}
