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

	"github.com/jackc/pgx/v5"
)

// Bouncer is the PgBouncer of this test binary: transaction pooling in
// front of the cluster, as most fleets reach PostgreSQL. A client's
// server connection is its own only for one transaction at a time, so a
// session's state (prepared statements, settings, advisory locks, LISTEN)
// ends up on a connection another client uses next.
type Bouncer struct {
	Port int // 127.0.0.1 port

	srv *server
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
	b := &Bouncer{Port: port}
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
pool_mode = transaction
default_pool_size = 20
max_client_conn = 2000
max_db_connections = 40
server_login_retry = 1
logfile = %s
`, c.SocketDir, c.Port, port, users, filepath.Join(c.Dir, "pgbouncer.log"))
	conf := filepath.Join(c.Dir, "pgbouncer.ini")
	if err := os.WriteFile(conf, []byte(ini), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-q", conf)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = serverAttr(cred, syscall.SIGTERM)
	// SIGTERM is PgBouncer's immediate shutdown, closing every connection.
	if b.srv, err = startServer("pgbouncer", cmd, syscall.SIGTERM); err != nil {
		return nil, err
	}
	if err := b.awaitReady(); err != nil {
		b.srv.stop()
		log, _ := os.ReadFile(filepath.Join(c.Dir, "pgbouncer.log"))
		return nil, fmt.Errorf("%v\npgbouncer.log:\n%s", err, log)
	}
	c.bouncer = b
	return b, nil
}

// awaitReady waits until a query passes through the bouncer to the server.
func (b *Bouncer) awaitReady() error {
	return b.srv.awaitReady(func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, b.URL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, "SELECT 1")
		return err
	})
}
