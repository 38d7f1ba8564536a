package postgres

// Package postgres is the store many hosts share: a PostgreSQL database
// through a pgx pool. Writers serialise inside the transaction on the
// writer lock (see writerLock), the database's clock judges so that hosts
// whose clocks disagree agree on who is stale, waiters are woken by
// LISTEN/NOTIFY, and a lost connection or a serialisation failure passes.
import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/migrations"
	"github.com/lockledger/lockledger/store"
	"github.com/lockledger/lockledger/verify"
)

// DefaultPoolSize is the number of connections a library ledger on
// PostgreSQL keeps at most.
const DefaultPoolSize = 4

// IsURL reports whether s names a PostgreSQL database.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Config is how a ledger database is opened.
type Config struct {
	// URL is postgres://... (the PG* environment and TLS settings honoured).
	URL      string
	PoolSize int
	// Busy bounds every wait for the database; Wait bounds the open.
	Busy, Wait time.Duration
	// ReadOnly opens for reading only: nothing is created or migrated.
	ReadOnly bool
	// Create makes the ledger's tables in an empty database or schema.
	Create bool
	Now    func() time.Time
	Log    *slog.Logger
	// LedgerID is the id of the ledger the writer writes ("" before it is
	// known): a database that holds another refuses its writes.
	LedgerID func() string
	// BeforeCreate, when set, is asked before Create makes the tables of
	// a new ledger in an empty database; its error refuses the open with
	// nothing created.
	BeforeCreate func() error
}

// Store is an open PostgreSQL ledger.
type Store struct {
	store.Pool
	cfg    Config
	db     *sql.DB
	pool   *pgxpool.Pool
	pgx    *pgxpool.Config
	source string
	// version is the schema version Connect found; deadline ends the
	// open, Connect's and Migrate's together.
	version  int
	deadline time.Time
	// unheard is set once a listener's probe went unheard: LISTEN does
	// not work through this URL, and every waiter polls.
	unheard atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Connect connects to the ledger's database and looks at what it holds,
// making and changing nothing: what the open refuses is refused here (a
// schema newer than this lockledger; no ledger where none is to be
// created; an old schema for a reader; a writer's role that may not append
// events), so that a caller can make what is its own (a root, a key, a
// pin) only for an open that goes on. Migrate then creates or migrates
// the tables. A bad URL is bad input.
func Connect(ctx context.Context, cfg Config) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, events.Invalid("--database", Redact(cfg.URL), err.Error())
	}
	pcfg.MaxConns = int32(cfg.PoolSize)
	pcfg.MinConns = 0
	sessionless(pcfg.ConnConfig)
	if pcfg.ConnConfig.ConnectTimeout == 0 {
		pcfg.ConnConfig.ConnectTimeout = max(DefaultConnectTimeout, cfg.Wait)
	}
	s := &Store{cfg: cfg, pgx: pcfg, source: describeDB(pcfg)}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect to %s: %w", s.source, err)
	}
	s.pool = pool
	if err := s.firstConn(ctx); err != nil {
		pool.Close()
		return nil, classify(err)
	}
	s.deadline = time.Now().Add(cfg.Wait)
	pctx, cancel := context.WithDeadline(ctx, s.deadline)
	defer cancel()
	s.db = sql.OpenDB(stdlib.GetPoolConnector(pool))
	s.db.SetMaxIdleConns(0)
	s.Pool = store.NewPool(s.db)
	if err := s.look(pctx); err != nil {
		s.Close()
		return nil, classify(s.openErr(ctx, pctx, err))
	}
	return s, nil
}

// DefaultConnectTimeout bounds making a connection to the database when
// neither the URL (connect_timeout) nor PGCONNECT_TIMEOUT sets a bound
// (or the open's wait, if longer): a server on a loaded host may take
// seconds to start the session of each new connection.
const DefaultConnectTimeout = 30 * time.Second

// firstConn makes the pool's first connection, bounded by the connect
// timeout alone: the open's wait (Config.Wait) starts once it is made.
func (s *Store) firstConn(ctx context.Context) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		if ce := (*pgconn.ConnectError)(nil); errors.As(err, &ce) {
			err = connectError{err}
		}
		if t := s.pgx.ConnConfig.ConnectTimeout; ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("ledger: connect to %s: no connection within the connect timeout (%s; connect_timeout in the URL or PGCONNECT_TIMEOUT sets it): %w",
				s.source, t, err)
		}
		return fmt.Errorf("ledger: connect to %s: %w", s.source, err)
	}
	c.Release()
	return nil
}

// Migrate applies the PostgreSQL migrations Connect found missing,
// creating the tables in an empty database (after Config.BeforeCreate).
// The caller closes the store if it fails.
//
// The open's deadline bounds the wait for another process's migration;
// one this process makes runs until it is done or ctx ends (an index
// built over a long log takes longer than an open gives itself).
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.prepare(ctx); err != nil {
		return classify(err)
	}
	return nil
}

// openErr is err of an open that the open's own deadline (Wait) cut short
// said so, with the database it could not reach in time; pgx's error of a
// connection refused is on one line.
func (s *Store) openErr(ctx, pctx context.Context, err error) error {
	if ce := (*pgconn.ConnectError)(nil); errors.As(err, &ce) {
		err = connectError{err}
	}
	if ctx.Err() == nil && pctx.Err() != nil {
		return fmt.Errorf("ledger: connect to %s: %w", s.source, err)
	}
	return err
}

// execMode is how every statement runs unless the URL asks for another
// way than pgx's default (default_query_exec_mode): no statement outlives
// its round trip. pgx's default prepares a named statement on the
// server connection and keeps it; through a pooler in transaction mode
// (PgBouncer) the next client of that connection then fails to prepare
// the same name (42P05), or finds the statement missing on another one.
const execMode = pgx.QueryExecModeExec

// sessionless keeps the pool's connections free of state that outlives a
// transaction: no named prepared statements (execMode), and no
// notifications kept for nobody. The pool never LISTENs, but through a
// pooler a notification meant for a connection that listened can reach
// one of the pool's at the end of its transaction; pgx would keep it.
func sessionless(cc *pgx.ConnConfig) {
	if cc.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		cc.DefaultQueryExecMode = execMode
	}
	cc.OnNotification = func(*pgconn.PgConn, *pgconn.Notification) {}
}

// look reads the schema version and refuses what Connect refuses.
func (s *Store) look(ctx context.Context) error {
	cur, err := migrations.Postgres.Current(ctx, s.db)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", s.source, err)
	}
	s.version = cur
	latest := migrations.Postgres.Latest()
	switch {
	case cur > latest:
		return fmt.Errorf("ledger: database schema version %d is newer than this lockledger (%d); upgrade lockledger", cur, latest)
	case cur == 0 && (s.cfg.ReadOnly || !s.cfg.Create):
		if err := s.checkEmptySchema(ctx, s.db); err != nil {
			return err
		}
		return &store.NoLedgerError{Where: s.source, Hint: "check --database, or create the tables with lockledger init"}
	case cur < migrations.Postgres.ReadableFrom() && s.cfg.ReadOnly:
		return fmt.Errorf("ledger: %w (version %d, this lockledger writes %d): open it once for writing", store.ErrOldSchema, cur, latest)
	case cur > 0 && !s.cfg.ReadOnly:
		var appends bool
		if err := s.db.QueryRowContext(ctx, mayAppend).Scan(&appends); err != nil {
			return fmt.Errorf("ledger: %s: %w", s.source, err)
		}
		if !appends {
			return s.mayNotAppend()
		}
		if cur < latest {
			return s.mayMigrate(ctx, cur, latest)
		}
	}
	return nil
}

// tablesOwner is the role that owns the ledger's tables, and whether this
// role has its rights (is it, a member of it, or a superuser): only the
// owner may make a migration (create an index, replace a function).
const tablesOwner = `SELECT tableowner::text, pg_has_role(tableowner, 'USAGE')
	FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'events'`

// mayMigrate refuses a writer that would have to migrate the schema from
// cur to latest and may not: a host upgraded before the owner migrated
// the database. The migration's own error would name a schema privilege,
// neither the versions nor who upgrades; refused here, at Connect, the
// host makes nothing of its own either (root, key, pin).
func (s *Store) mayMigrate(ctx context.Context, cur, latest int) error {
	var owner string
	var owns bool
	if err := s.db.QueryRowContext(ctx, tablesOwner).Scan(&owner, &owns); err != nil {
		return fmt.Errorf("ledger: %s: %w", s.source, err)
	}
	if owns {
		return nil
	}
	return fmt.Errorf("ledger: %s: the database's schema is version %d and this lockledger needs %d; only the tables' owner (role %s) "+
		"may upgrade it: as %s, run lockledger --database URL verify once (URL the owner's: its verify's record is a write, "+
		"which migrates), then run this command again; nothing was written", s.source, cur, latest, owner, owner)
}

// mayAppend is whether the role may append events at all: the writer
// lock's round trip asks it again (see writerLock), since a grant can be
// revoked while a writer runs.
const mayAppend = `SELECT has_table_privilege('events', 'INSERT')`

// mayNotAppend refuses a writer whose role may not append events (an
// auditor's, which may only read).
func (s *Store) mayNotAppend() error {
	return fmt.Errorf("ledger: %s: %w: a writer needs INSERT on events "+
		"(GRANT INSERT ON events, tlog_hashes, checkpoints TO the writer role, as the database's owner)", s.source, store.ErrMayNotAppend)
}

// prepare makes or migrates the tables Connect found missing or old; a
// read-only store changes nothing (Connect let it through only at a
// version it reads as it stands: migrations.Set.ReadableFrom).
func (s *Store) prepare(ctx context.Context) error {
	switch {
	case s.cfg.ReadOnly:
		return nil
	case s.version < migrations.Postgres.Latest():
		return s.migrate(ctx)
	}
	return nil
}

// migrate brings the schema to the latest version in one transaction
// under the migration lock, looking again once it holds it: of concurrent
// first opens, one creates the tables and the others find them made.
// Config.BeforeCreate is asked there too, of a database still empty under
// the lock, not as Connect found it: another first open may have made the
// ledger since, and pinned it in the root that BeforeCreate reads.
func (s *Store) migrate(ctx context.Context) error {
	var refused error // BeforeCreate's, or checkEmptySchema's, which names the database itself
	fresh := func(tx *sql.Tx) error {
		if s.cfg.BeforeCreate != nil {
			if refused = s.cfg.BeforeCreate(); refused != nil {
				return refused
			}
		}
		refused = s.checkEmptySchema(ctx, tx)
		return refused
	}
	wait := max(time.Until(s.deadline), time.Millisecond)
	if err := migrations.Postgres.MigrateWithin(ctx, s.db, wait, fresh, func() string { return events.FormatTime(s.cfg.Now()) }); err != nil {
		if refused != nil {
			return refused
		}
		return fmt.Errorf("ledger: %s: %w", s.source, err)
	}
	return nil
}

// writerLock serialises the writers of the ledger in the connection's
// schema: the one row of writer_lock, locked FOR UPDATE, which needs the
// UPDATE privilege on it that only writers have (a role that may only read
// cannot hold up the writers). The ledger's id and whether the role may
// append events come back in the same round trip: the writer checks that
// the database is still its ledger, and that it may write there at all.
//
// The same statement bounds the writer, by its filter (settings of the
// transaction only, so that nothing is left on a pooled connection): the
// scan evaluates the filter on the row it reads before the row lock above
// it waits for the row, so that wait is already bounded. lock_timeout ($1,
// the busy timeout in milliseconds) bounds every lock wait of the
// transaction, the writer row's included. idle_in_transaction_session_timeout
// ($2, half of it) bounds how long the transaction may sit idle between
// statements: a writer whose process is stopped (SIGSTOP, a frozen VM)
// while it holds the writer lock is cut off by the server and its
// transaction rolled back, so it holds up every other host's writes,
// heartbeats included, for half the busy timeout at most instead of for as
// long as it stays stopped. Half, so that a writer waiting behind it gets
// the lock before its own lock_timeout ends the wait. A writer itself never
// waits that long between statements: nothing it does inside its
// transaction blocks without a bound shorter than that (the signed head is
// read without a lock, a witness for at most a quarter of the busy timeout,
// the lock file's journal is fsynced while the commit is in flight).
const writerLock = `SELECT (SELECT value FROM meta WHERE key = 'ledger_id'), has_table_privilege('events', 'INSERT')
	FROM writer_lock
	WHERE id = 1 AND set_config('lock_timeout', $1, true) IS NOT NULL
		AND set_config('idle_in_transaction_session_timeout', $2, true) IS NOT NULL
	FOR UPDATE`

// boundWaits bounds every lock wait of a read transaction by the busy
// timeout, as writerLock bounds a writer's.
const boundWaits = `SELECT set_config('lock_timeout', $1, true)`

// Begin takes the writer lock for the transaction: every writer on every
// host passes this point one at a time, so seq stays contiguous and the
// chain total. Under READ COMMITTED each later statement reads what the
// writer before committed. A writer lock held for longer than the busy
// timeout fails the begin with a transient error that names it.
func (s *Store) Begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	var stored sql.NullString
	var appends bool
	if err := tx.QueryRowContext(ctx, writerLock, s.lockTimeout(), s.idleTimeout()).Scan(&stored, &appends); err != nil {
		tx.Rollback()
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("ledger: %s has no writer_lock row: %w", s.source, store.ErrLedgerGone)
		}
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == "55P03":
			return nil, fmt.Errorf("ledger: the writer lock of %s (the row of writer_lock, locked FOR UPDATE by a writer's transaction) "+
				"was held for longer than the busy timeout (%s): %w", s.source, s.cfg.Busy, err)
		case errors.As(err, &pe) && pe.Code == "42501":
			return nil, fmt.Errorf("ledger: %s: a writer needs UPDATE on writer_lock to take the writer lock "+
				"(GRANT UPDATE ON writer_lock TO the writer role, as the database's owner): %w", s.source, err)
		}
		return nil, err
	}
	if !appends {
		// Refused here, before the decision places any lock file it would
		// only have to take back.
		tx.Rollback()
		return nil, s.mayNotAppend()
	}
	id := stored.String
	if !stored.Valid {
		tx.Rollback()
		return nil, fmt.Errorf("ledger: %s has no ledger id: %w", s.source, store.ErrLedgerGone)
	}
	if want := s.cfg.LedgerID(); want != "" && id != want {
		tx.Rollback()
		return nil, fmt.Errorf("ledger: %s is now ledger %.64s, not %s: %w", s.source, id, want, store.ErrLedgerGone)
	}
	return tx, nil
}

// BeginRead is REPEATABLE READ: under READ COMMITTED every statement would
// read the writes committed since the one before. Its lock waits (behind a
// table lock a writer or the owner holds) are bounded as a writer's.
func (s *Store) BeginRead(ctx context.Context) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, boundWaits, s.lockTimeout()); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// lockTimeout is the busy timeout as lock_timeout's value, in milliseconds.
func (s *Store) lockTimeout() string {
	return strconv.FormatInt(max(s.cfg.Busy.Milliseconds(), 1), 10)
}

// idleTimeout is half the busy timeout, idle_in_transaction_session_timeout's
// value for a writer (see writerLock), in milliseconds.
func (s *Store) idleTimeout() string {
	return strconv.FormatInt(max(s.cfg.Busy.Milliseconds()/2, 1), 10)
}

// Clock is the database's clock, so that hosts whose clocks disagree agree
// on who is stale.
func (s *Store) Clock(ctx context.Context, q store.Querier) (time.Time, error) {
	if q == nil {
		q = s.db
	}
	var t time.Time
	if err := q.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("ledger: read the database's clock: %w", err)
	}
	return t.UTC(), nil
}

// Changed sends one notification per lock, each with the lock's name as
// its payload, in one round trip (a group's write sends them with its
// writes instead: store.PreparedTx.Flush).
func (s *Store) Changed(ctx context.Context, tx store.Execer, locks []string) error {
	return store.Notify(ctx, tx, locks)
}

func (s *Store) Watch(lock string) store.Waker { return &waker{s: s, lock: lock} }

func (s *Store) ManyHosts() bool { return true }

// Empty reports whether Connect found no ledger in the database: Migrate
// would create one.
func (s *Store) Empty() bool { return s.version == 0 }

// EmptyNow reports whether the database holds no ledger now, as read
// again: another first open may have made it since Connect. A failed read
// says it holds one, so that nothing is refused for it; the open that
// follows meets the failure itself.
func (s *Store) EmptyNow(ctx context.Context) bool {
	cur, err := migrations.Postgres.Current(ctx, s.db)
	return err == nil && cur == 0
}

// CachesStatements: the ledger prepares nothing on PostgreSQL, where a
// named statement would outlive its transaction on a pooled server
// connection; each statement runs in one round trip (execMode).
func (s *Store) CachesStatements() bool { return true }

// DecisionCalls: a group's reads and writes go in one call each to the
// functions of migration 0012 (see store.LoadDecision).
func (s *Store) DecisionCalls() bool { return true }

func (s *Store) Size(ctx context.Context) (n int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT pg_total_relation_size('events')`).Scan(&n)
	return n, err
}

func (s *Store) Compact(context.Context) error { return nil }

func (s *Store) Source() string { return s.source }

func (s *Store) CheckStorage(ctx context.Context, q store.Querier, _ store.StorageCheck, rep *verify.Report) error {
	return CheckStorage(ctx, q, rep)
}

// FollowCopiedIDs sets the checkpoints' id sequence past the copied ids.
func (s *Store) FollowCopiedIDs(ctx context.Context, tx store.Execer) error {
	_, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('checkpoints', 'id'), coalesce((SELECT max(id) FROM checkpoints), 0) + 1, false)`)
	return err
}

func (s *Store) Close() error {
	err := s.db.Close()
	s.pool.Close()
	return err
}

// detachWait bounds how long Detach waits for the connections to close:
// one broken by a cancelled query (a partition) is closed by pgx after a
// cancel request that may take 15 s to give up.
const detachWait = 250 * time.Millisecond

// Detach closes the pool, waiting at most detachWait: a process about to
// exit leaves what is left to the operating system.
func (s *Store) Detach() error {
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	t := time.NewTimer(detachWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		s.cfg.Log.Debug("left closing the database connections to the exit", "waited", detachWait)
		return nil
	}
}

// connectError is an error of pgx's ConnectError on one line: pgx writes
// each address it tried on a line of its own.
type connectError struct{ error }

func (e connectError) Error() string {
	return strings.NewReplacer(":\n\t", ": ", "\n\t", "; ").Replace(e.error.Error())
}

func (e connectError) Unwrap() error { return e.error }

// Classify names the kinds of failure err is (see classify).
func (s *Store) Classify(err error) error { return classify(err) }

// classify is err naming its kinds: the server's refusal of a statement
// for a right the role lacks (SQLSTATE 42501) is store.ErrPermissionDenied;
// a passing failure (transient) store.ErrTransient, and one of the
// database out of reach (unreachable) store.ErrUnreachable too.
func classify(err error) error {
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.Code == "42501":
		return store.Classified(err, store.ErrPermissionDenied)
	case unreachable(err):
		return store.Classified(err, store.ErrTransient, store.ErrUnreachable)
	case transient(err):
		return store.Classified(err, store.ErrTransient)
	}
	return err
}

// transient: a serialisation failure, a deadlock, a lock or connection
// slot that is not to be had now, a session the server ended for sitting
// idle in its transaction past half the busy timeout (25P03: this writer
// was stopped or starved of CPU meanwhile, and its transaction is rolled
// back, as unreachable's sessions' are), or the database out of reach for
// now (unreachable). The database may be back at the next try.
func transient(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "55P03", "53300", "25P03":
			return true
		}
	}
	return unreachable(err)
}

// unreachable: a session the server ended or a connection lost, or none to
// be made (a restart or failover: a fast shutdown or a terminated backend
// sends 57P01, a crash of another backend 57P02, a server starting up or
// shutting down refuses a connection with 57P03, a pooler that cannot log
// in to it 08P01, and an immediate shutdown closes the connection without
// an error). Trying again cannot make a decision twice: a session that ends
// before its COMMIT was sent rolls its transaction back, and a COMMIT whose
// reply was lost is read back by the ledger (ErrCommitUnknown when it
// cannot be, which is never retried).
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03":
			return true
		}
		return strings.HasPrefix(pe.Code, "08")
	}
	var ce *pgconn.ConnectError
	var oe *net.OpError
	return errors.As(err, &ce) || errors.As(err, &oe) || errors.Is(err, driver.ErrBadConn) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// checkEmptySchema refuses a schema that holds tables of another
// application: the ledger adds nothing to it.
func (s *Store) checkEmptySchema(ctx context.Context, q store.Querier) error {
	var n int
	var first sql.NullString
	err := q.QueryRowContext(ctx, `SELECT count(*), min(tablename) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()`).
		Scan(&n, &first)
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", s.source, err)
	}
	if n > 0 {
		return fmt.Errorf("ledger: %s: %w: its schema holds %d tables (%s, ...) but no ledger; use an empty database or schema",
			s.source, store.ErrNotALedger, n, first.String)
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

// Redact drops the password from a database URL for messages.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// waker listens on its own connection (a listener), opened at the first
// wait, and wakes on a notification for its lock; without one, and once
// notifications are known not to arrive, it sleeps.
type waker struct {
	s      *Store
	lock   string
	l      *listener
	failed bool
}

func (w *waker) Wait(ctx context.Context, d time.Duration) {
	if w.s.unheard.Load() {
		w.Close()
	} else if w.l == nil && !w.failed {
		// Connecting may take longer than one sleep: it has the busy
		// timeout, as any other database call.
		l, err := w.s.listen(ctx, w.s.cfg.Busy)
		if err != nil {
			w.s.cfg.Log.Debug("waiting without LISTEN: polling instead", "err", err)
			w.failed = true
		} else {
			w.l = l
		}
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if w.l == nil {
		<-wctx.Done()
		return
	}
	for {
		payload, err := w.l.next(wctx)
		if err != nil {
			if wctx.Err() == nil {
				// The connection broke, or hears nothing: poll from now on.
				// A broken one is said (errUnheard has been, once per
				// store): the waiter sees the release later.
				if !errors.Is(err, errUnheard) {
					w.s.cfg.Log.Warn("the connection that listened for the lock's release was closed: waiting by polling from now on, "+
						"so the release is seen later (a server's idle_session_timeout or a pooler's client_idle_timeout ends a connection "+
						"that only listens)", "lock", w.lock, "database", w.s.source, "err", err)
				}
				w.Close()
				w.failed = true
				<-wctx.Done()
			}
			return
		}
		if payload == w.lock {
			w.s.cfg.Log.Debug("woken by the database's notification of a change to the lock", "lock", w.lock)
			return
		}
	}
}

func (w *waker) Close() {
	if w.l != nil {
		w.l.close()
		w.l = nil
	}
}
