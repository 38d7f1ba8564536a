package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/internal/backoff"
)

// Bouncer is the PgBouncer of this test binary: transaction pooling in
// front of the cluster, as most fleets reach PostgreSQL. A client's
// server connection is its own only for one transaction at a time, so a
// session's state (prepared statements, settings, advisory locks, LISTEN)
// ends up on a connection another client uses next.
//
// PgBouncer 1.18 (Debian 12's, which CI installs) exits at times with a
// FATAL error around cancel requests, a defect its releases 1.19.1 to
// 1.21 fixed (RELIABILITY.md). A fleet runs its pooler under a service
// manager that starts it again; so does the Bouncer, on the same port
// (again, with backoff, until one runs),
// saying so on the test binary's standard error with the end of its log,
// so that one crash of the pooler is an outage of a second for the tests
// then running rather than the end of every later test behind it.
type Bouncer struct {
	Port int // 127.0.0.1 port

	log   string                  // its log file
	start func() (*server, error) // starts a pgbouncer process on Port
	done  chan struct{}           // closed once supervise has returned
	quit  context.CancelFunc      // called by stop, under mu: supervise starts no other

	mu  sync.Mutex
	srv *server // the pgbouncer running now
}

// ErrNoBouncer is returned by StartBouncer when pgbouncer is not installed.
var ErrNoBouncer = errors.New("pgbouncer not found")

var (
	bouncerOnce sync.Once
	bouncer     *Bouncer
	bouncerErr  error
)

// GetBouncer returns the PgBouncer of this test binary in front of Get's
// cluster, starting it on first use. It skips the test loudly when
// pgbouncer is not installed, and fails it instead under CI
// (LOCKLEDGER_CI=1).
func GetBouncer(t testing.TB) *Bouncer {
	t.Helper()
	c := Get(t)
	bouncerOnce.Do(func() { bouncer, bouncerErr = c.StartBouncer() })
	started(t, "pgbouncer", bouncerErr, ErrNoBouncer)
	return bouncer
}

// NewBouncedDatabase creates a fresh, empty database in the cluster, dropped
// when the test ends, and returns a URL reaching it through the PgBouncer.
func NewBouncedDatabase(t testing.TB) string {
	t.Helper()
	b := GetBouncer(t)
	return b.URL(CreateDatabase(t))
}

// URL returns a URL reaching database name through the PgBouncer.
func (b *Bouncer) URL(name string) string {
	return URLAt("127.0.0.1:"+strconv.Itoa(b.Port), name)
}

// findBouncer returns the pgbouncer program: on PATH, else where Debian
// installs it (/usr/sbin, off a user's PATH).
func findBouncer() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if fi, err := os.Stat("/usr/sbin/pgbouncer"); err == nil && !fi.IsDir() {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", fmt.Errorf("%w on PATH nor in /usr/sbin", ErrNoBouncer)
}

// StartBouncer starts a PgBouncer in transaction pooling mode in front of
// c, reaching it on its unix socket; its files live in c's directory, and
// c.Stop stops it. The error matches ErrNoBouncer when pgbouncer is not
// installed.
func (c *Cluster) StartBouncer() (*Bouncer, error) {
	bin, err := findBouncer()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential() // it refuses to run as root, as postgres does
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &Bouncer{Port: port, log: filepath.Join(c.Dir, "pgbouncer.log")}
	// Every role passes as it does on the server (trust): the superuser
	// from the users file, the roles the tests create looked up on the
	// server (auth_query, as the superuser).
	users := filepath.Join(c.Dir, "pgbouncer.users")
	if err := os.WriteFile(users, []byte(strconv.Quote(Superuser)+` ""`+"\n"), 0o644); err != nil {
		return nil, err
	}
	// The pools are as large as a test's ledgers need, each database's
	// own; clients beyond them queue, as a fleet's do. A server login that
	// failed (the server restarting) is tried again after a second, as
	// docs/postgresql.md advises, rather than PgBouncer's 15 s.
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
auth_user = `+Superuser+`
admin_users = `+Superuser+`
pool_mode = transaction
default_pool_size = 20
max_client_conn = 2000
max_db_connections = 40
server_login_retry = 1
logfile = %s
`, c.SocketDir, c.Port, port, users, b.log)
	conf := filepath.Join(c.Dir, "pgbouncer.ini")
	if err := os.WriteFile(conf, []byte(ini), 0o644); err != nil {
		return nil, err
	}
	b.start = func() (*server, error) {
		cmd := exec.Command(bin, "-q", conf)
		cmd.Dir = c.Dir
		cmd.SysProcAttr = serverAttr(cred, syscall.SIGTERM)
		// SIGTERM is PgBouncer's immediate shutdown, closing every connection.
		srv, err := startServer("pgbouncer", cmd, syscall.SIGTERM)
		if err != nil {
			return nil, err
		}
		// Its admin console answers, which only a pgbouncer does: another
		// program that took the port meanwhile (a listener's bind to port 0
		// can be given it) accepts connections too, while the pgbouncer
		// started exits, unable to listen. Started again while the server
		// is down, it could not pass a query to it.
		if err := awaitQuery(srv, URLAt("127.0.0.1:"+strconv.Itoa(b.Port), "pgbouncer"), "SHOW VERSION"); err != nil {
			srv.stop()
			return nil, fmt.Errorf("%v\nthe end of pgbouncer.log:\n%s", err, b.logTail())
		}
		return srv, nil
	}
	if b.srv, err = b.start(); err != nil {
		return nil, err
	}
	if err := awaitQuery(b.srv, b.URL("postgres"), "SELECT 1"); err != nil {
		b.srv.stop()
		return nil, fmt.Errorf("%v\nthe end of pgbouncer.log:\n%s", err, b.logTail())
	}
	b.done = make(chan struct{})
	ctx, quit := context.WithCancel(context.Background())
	b.quit = quit
	go b.supervise(ctx)
	c.bouncer = b
	return b, nil
}

// supervise starts pgbouncer again each time it exits before stop, and
// tries again, with backoff, until it runs: a start can fail for a while
// (its port held meanwhile by another socket, the local end of a client's
// connection as well as a listener; a second crash as clients come back),
// and one failed start given up on would leave every later test behind
// the pooler refused.
func (b *Bouncer) supervise(ctx context.Context) {
	defer close(b.done)
	for {
		b.mu.Lock()
		srv := b.srv
		b.mu.Unlock()
		<-srv.exited
		if ctx.Err() != nil { // stopped
			return
		}
		fmt.Fprintf(os.Stderr, "pgtest: pgbouncer exited on its own (%v); starting it again. The end of its log:\n%s\n", srv.cmd.ProcessState, b.logTail())
		retry := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
		for !b.restart(ctx) {
			if backoff.Sleep(ctx, retry.Next()) != nil {
				return
			}
		}
	}
}

// restart starts pgbouncer again unless stop was called (ctx ended), and
// reports whether the supervisor has one to wait for.
func (b *Bouncer) restart(ctx context.Context) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ctx.Err() != nil {
		return true // the last one, which has exited: supervise returns
	}
	next, err := b.start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: pgbouncer could not be started again; trying again: %v\n", err)
		return false
	}
	b.srv = next
	return true
}

// logTail is the end of pgbouncer's log, for messages.
func (b *Bouncer) logTail() []byte {
	log, _ := os.ReadFile(b.log)
	const tail = 4 << 10
	if len(log) > tail {
		log = log[len(log)-tail:]
	}
	return log
}

// stop stops pgbouncer for good.
func (b *Bouncer) stop() error {
	b.mu.Lock()
	b.quit()
	srv := b.srv
	b.mu.Unlock()
	err := srv.stop()
	<-b.done
	return err
}

// awaitQuery waits until srv, a pgbouncer listening at url, answers
// query there.
func awaitQuery(srv *server, url, query string) error {
	return srv.awaitReady(func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, query)
		return err
	})
}
