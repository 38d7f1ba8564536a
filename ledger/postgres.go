package ledger

// PostgreSQL specifics live in this file: the connection pool, the
// serialisation point, the database's clock, LISTEN/NOTIFY for waiters and
// the failures that pass. The ledger's SQL is written once, in the dialect
// both engines speak ($N placeholders included).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/migrations"
)

// DefaultPoolSize is the number of connections a library ledger on
// PostgreSQL keeps at most (see WithPoolSize).
const DefaultPoolSize = 4

// notifyChannel carries the name of every lock a write changed.
const notifyChannel = "lockledger"

// IsPostgresURL reports whether s names a PostgreSQL database.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

type pgStore struct {
	l    *Ledger
	pool *pgxpool.Pool
	cfg  *pgxpool.Config
}

func (s *pgStore) kind() string { return "postgres" }

// lockWriter takes this host's writer mutex (flock on ROOT/writer.flock),
// as on SQLite: it covers what a decision does to this host's lock files
// after its commit (the journal's removal), which the database's lock,
// released at the commit, does not. Other hosts have files of their own.
func (s *pgStore) lockWriter(ctx context.Context) (func(), error) { return s.l.flockWriter(ctx) }

// writerLock is the transaction-level advisory lock that serialises the
// writers of the ledger in the connection's schema. It stands for the
// head row locked FOR UPDATE, without the UPDATE privilege on any table
// that locking a row would need: a writer role inserts, and that is all.
// The ledger's id comes back in the same round trip: the writer checks
// that the database is still its ledger.
const writerLock = `SELECT pg_advisory_xact_lock(1819240306, hashtext(current_schema())) IS NULL,
	(SELECT value FROM meta WHERE key = 'ledger_id')`

// begin takes the writer lock for the transaction: every writer on every
// host passes this point one at a time, so seq stays contiguous and the
// chain total. Under READ COMMITTED each later statement reads what the
// writer before committed.
func (s *pgStore) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.l.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	var locked bool
	var stored sql.NullString
	if err := tx.QueryRowContext(ctx, writerLock).Scan(&locked, &stored); err != nil {
		tx.Rollback()
		return nil, err
	}
	id := stored.String
	if !stored.Valid {
		tx.Rollback()
		return nil, fmt.Errorf("ledger: %s has no ledger id: %w", s.l.where(), ErrLedgerGone)
	}
	if s.l.id != "" && id != s.l.id {
		tx.Rollback()
		return nil, fmt.Errorf("ledger: %s is now ledger %s, not %s: %w", s.l.where(), clip(id, 64), s.l.id, ErrLedgerGone)
	}
	return tx, nil
}

// clock is the database's clock, so that hosts whose clocks disagree agree
// on who is stale.
func (s *pgStore) clock(ctx context.Context, q querier) (time.Time, error) {
	if q == nil {
		q = s.l.db
	}
	var t time.Time
	if err := q.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("ledger: read the database's clock: %w", err)
	}
	return t.UTC(), nil
}

func (s *pgStore) changed(ctx context.Context, tx execer, lock string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, lock)
	return err
}

func (s *pgStore) watch(lock string) waker { return &pgWaker{s: s, lock: lock} }

func (s *pgStore) transient(err error) bool { return pgTransient(err) }

func (s *pgStore) shared() bool { return true }

func (s *pgStore) cachesStatements() bool { return true }

func (s *pgStore) close() error {
	err := s.l.db.Close()
	s.pool.Close()
	return err
}

// detachWait bounds how long Detach waits for PostgreSQL connections to
// close: one broken by a cancelled query (a partition) is closed by pgx
// after a cancel request that may take 15 s to give up.
const detachWait = 250 * time.Millisecond

// closeWithin closes the pool, waiting at most d: a process about to exit
// leaves what is left to the operating system.
func (s *pgStore) closeWithin(d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- s.close() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		s.l.log.Debug("left closing the database connections to the exit", "waited", d)
		return nil
	}
}

// pgTransient: a serialisation failure, a deadlock, a lock or connection
// that is not to be had now, or a connection lost. The database may be back
// at the next try.
func pgTransient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "55P03", "57P03", "53300":
			return true
		}
		return strings.HasPrefix(pe.Code, "08")
	}
	var ce *pgconn.ConnectError
	var oe *net.OpError
	return errors.As(err, &ce) || errors.As(err, &oe) || errors.Is(err, driver.ErrBadConn) || pgconn.SafeToRetry(err)
}

// openPostgres connects to the ledger's database, applies the PostgreSQL
// migrations and reads or makes the ledger's id.
func (l *Ledger) openPostgres(ctx context.Context, c *config) error {
	cfg, err := pgxpool.ParseConfig(c.database)
	if err != nil {
		return events.Invalid("--database", redactURL(c.database), err.Error())
	}
	cfg.MaxConns = int32(c.poolSize)
	cfg.MinConns = 0
	l.dbName = describeDB(cfg)
	pctx, cancel := context.WithTimeout(ctx, max(c.busy, c.openWait))
	defer cancel()
	pool, err := pgxpool.NewWithConfig(pctx, cfg)
	if err != nil {
		return fmt.Errorf("ledger: connect to %s: %w", l.dbName, err)
	}
	l.db = sql.OpenDB(stdlib.GetPoolConnector(pool))
	l.db.SetMaxIdleConns(0)
	s := &pgStore{l: l, pool: pool, cfg: cfg}
	l.store = s
	if err := l.preparePostgres(pctx, c); err != nil {
		s.close()
		if ctx.Err() == nil && pctx.Err() != nil {
			return fmt.Errorf("ledger: connect to %s: %w", l.dbName, err)
		}
		return err
	}
	return nil
}

func (l *Ledger) preparePostgres(ctx context.Context, c *config) error {
	cur, err := migrations.Postgres.Current(ctx, l.db)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", l.dbName, err)
	}
	latest := migrations.Postgres.Latest()
	switch {
	case cur > latest:
		return fmt.Errorf("ledger: database schema version %d is newer than this lockledger (%d); upgrade lockledger", cur, latest)
	case cur == 0 && (l.readOnly || !c.create):
		if err := l.checkEmptySchema(ctx, l.db); err != nil {
			return err
		}
		return fmt.Errorf("%w in %s (nothing has been recorded there; check --database)", ErrNoLedger, l.dbName)
	case cur < latest && l.readOnly:
		return fmt.Errorf("ledger: %w (version %d, this lockledger writes %d): open it once for writing", ErrOldSchema, cur, latest)
	case cur < latest:
		if err := l.migratePostgres(ctx); err != nil {
			return err
		}
	}
	return l.loadID(ctx, birth{allowed: func() error { return nil }})
}

// migratePostgres brings the schema to the latest version under the
// migration lock, looking again once it holds it: of concurrent first
// opens, one creates the tables and the others find them made.
func (l *Ledger) migratePostgres(ctx context.Context) error {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", l.dbName, err)
	}
	defer conn.Close()
	unlock, err := migrations.Postgres.Lock(ctx, conn)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", l.dbName, err)
	}
	defer unlock()
	cur, err := migrations.Postgres.Current(ctx, conn)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", l.dbName, err)
	}
	if cur == 0 {
		if err := l.checkEmptySchema(ctx, conn); err != nil {
			return err
		}
	}
	if err := migrations.Postgres.Apply(ctx, conn, func() string { return events.FormatTime(l.now()) }); err != nil {
		return fmt.Errorf("ledger: %s: %w", l.dbName, err)
	}
	return nil
}

// checkEmptySchema refuses a schema that holds tables of another
// application: the ledger adds nothing to it.
func (l *Ledger) checkEmptySchema(ctx context.Context, q querier) error {
	var n int
	var first sql.NullString
	err := q.QueryRowContext(ctx, `SELECT count(*), min(tablename) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`).
		Scan(&n, &first)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", l.dbName, err)
	}
	if n > 0 {
		return fmt.Errorf("ledger: %s: %w: its schema holds %d tables (%s, ...) but no ledger; use an empty database or schema",
			l.dbName, ErrNotALedger, n, first.String)
	}
	return nil
}

// describeDB names a database for messages, without its password.
func describeDB(cfg *pgxpool.Config) string {
	cc := cfg.ConnConfig
	host := cc.Host
	if strings.HasPrefix(host, "/") {
		host = "socket " + host
	} else {
		host = net.JoinHostPort(host, strconv.Itoa(int(cc.Port)))
	}
	return fmt.Sprintf("postgres database %s on %s as %s", cc.Database, host, cc.User)
}

// redactURL drops the password from a database URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// pgWaker listens on its own connection, opened at the first wait, and
// wakes on a notification for its lock; without one it sleeps.
type pgWaker struct {
	s      *pgStore
	lock   string
	conn   *pgx.Conn
	failed bool
}

func (w *pgWaker) wait(ctx context.Context, d time.Duration) {
	if w.conn == nil && !w.failed {
		// Connecting may take longer than one sleep: it has the busy
		// timeout, as any other database call.
		cctx, cancel := context.WithTimeout(ctx, w.s.l.busy)
		conn, err := pgx.ConnectConfig(cctx, w.s.cfg.ConnConfig.Copy())
		if err == nil {
			if _, err = conn.Exec(cctx, `LISTEN `+notifyChannel); err != nil {
				conn.Close(context.Background())
			}
		}
		cancel()
		if err != nil {
			w.s.l.log.Debug("waiting without LISTEN: polling instead", "err", err)
			w.failed = true
		} else {
			w.conn = conn
		}
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if w.conn == nil {
		<-wctx.Done()
		return
	}
	for {
		n, err := w.conn.WaitForNotification(wctx)
		if err != nil {
			if wctx.Err() == nil {
				// The connection broke: poll from now on.
				w.close()
				w.failed = true
				<-wctx.Done()
			}
			return
		}
		if n.Payload == w.lock {
			return
		}
	}
}

func (w *pgWaker) close() {
	if w.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		w.conn.Close(ctx)
		w.conn = nil
	}
}
