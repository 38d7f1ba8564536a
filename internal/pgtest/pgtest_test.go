package pgtest_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockledger/lockledger/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestClusterServesSocketAndTCP(t *testing.T) {
	url := pgtest.NewDatabase(t)
	conn := connect(t, url)
	var db, maxConns string
	if err := conn.QueryRow(context.Background(), "SELECT current_database(), current_setting('max_connections')").Scan(&db, &maxConns); err != nil {
		t.Fatal(err)
	}
	if want := "300"; maxConns != want {
		t.Errorf("max_connections = %s, want %s", maxConns, want)
	}
	if conn.PgConn().Conn().RemoteAddr().Network() != "unix" {
		t.Errorf("NewDatabase's URL %s did not connect over a unix socket", url)
	}
	tcp := connect(t, pgtest.TCPURL(t, db))
	if tcp.PgConn().Conn().RemoteAddr().Network() != "tcp" {
		t.Errorf("TCPURL did not connect over TCP")
	}
	var db2 string
	if err := tcp.QueryRow(context.Background(), "SELECT current_database()").Scan(&db2); err != nil {
		t.Fatal(err)
	}
	if db2 != db {
		t.Errorf("TCPURL reached database %s, want %s", db2, db)
	}
}

func TestDatabasesAreSeparateAndDropped(t *testing.T) {
	var names [2]string
	t.Run("create", func(t *testing.T) {
		a := connect(t, pgtest.NewDatabase(t))
		b := connect(t, pgtest.NewDatabase(t))
		ctx := context.Background()
		if _, err := a.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
			t.Fatal(err)
		}
		for i, c := range []*pgx.Conn{a, b} {
			if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&names[i]); err != nil {
				t.Fatal(err)
			}
		}
		if names[0] == names[1] {
			t.Fatalf("two NewDatabase calls gave the same database %s", names[0])
		}
		if n := queryInt(t, b, "SELECT count(*) FROM pg_tables WHERE tablename = 'only_in_a'"); n != 0 {
			t.Errorf("a table created in %s is visible in %s", names[0], names[1])
		}
		// Left open on purpose: the drop must force them out.
	})
	admin := connect(t, pgtest.NewDatabase(t))
	for _, name := range names {
		var n int
		if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("database %s still exists after its test ended", name)
		}
	}
}

func TestProxyForwards(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	p := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	conn := connect(t, p.URL(name))
	if n := queryInt(t, conn, "SELECT 41 + 1"); n != 42 {
		t.Errorf("SELECT 41 + 1 through the proxy = %d", n)
	}
}

func TestProxyCutFailsAndRestoreRecovers(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	p := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	conn := connect(t, p.URL(name))
	queryInt(t, conn, "SELECT 1")

	p.Cut()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&n); err == nil {
		t.Fatal("a query on a cut connection succeeded")
	}
	if c, err := pgx.Connect(context.Background(), p.URL(name)); err == nil {
		c.Close(context.Background())
		t.Fatal("a new connection through a cut proxy succeeded")
	}

	p.Restore()
	if n := queryInt(t, connect(t, p.URL(name)), "SELECT 7"); n != 7 {
		t.Errorf("SELECT 7 after Restore = %d", n)
	}
}

func TestProxyHangTimesOutAndRestoreRecovers(t *testing.T) {
	name := pgtest.CreateDatabase(t)
	p := pgtest.NewProxy(t, pgtest.TCPAddr(t))
	conn := connect(t, p.URL(name))
	queryInt(t, conn, "SELECT 1")

	p.Hang()
	// The deadline is how the client notices; while hung no answer can
	// arrive, so the query cannot succeed however slow the machine.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var n int
	err := conn.QueryRow(ctx, "SELECT 1").Scan(&n)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("query on a hung connection: err = %v, want the context deadline", err)
	}

	p.Restore()
	if n := queryInt(t, connect(t, p.URL(name)), "SELECT 8"); n != 8 {
		t.Errorf("SELECT 8 after Restore = %d", n)
	}
}

// A program that is not a test starts its own cluster, separate from the
// test binary's, and Stop takes the server down and removes its directory.
func TestStartClusterAndStop(t *testing.T) {
	pgtest.Get(t) // skips (or fails under CI) without the server programs
	c, err := pgtest.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	if err := c.CreateDatabase("standalone"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), c.SocketURL("standalone"))
	if err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, conn, "SELECT 9"); n != 9 {
		t.Errorf("SELECT 9 = %d", n)
	}
	conn.Close(context.Background())
	if err := c.DropDatabase("standalone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.LogPath()); err != nil {
		t.Errorf("server log: %v", err)
	}
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Stop, %s: err = %v, want it gone", c.Dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, c.SocketURL("postgres")); err == nil {
		conn.Close(context.Background())
		t.Error("connected to the cluster after Stop")
	}
}

// The bouncer reaches the database it is asked for, and pools by
// transaction: a second client's transaction runs on the server
// connection the first one used, so a session's state is shared.
func TestBouncerPoolsByTransaction(t *testing.T) {
	url := pgtest.NewBouncedDatabase(t)
	a, b := connect(t, url), connect(t, url)
	var db string
	if err := a.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if want := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]; db != want {
		t.Errorf("reached database %s, want %s", db, want)
	}
	if _, err := a.Exec(context.Background(), "SET pgtest.mark = 'set-by-a'"); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := b.QueryRow(context.Background(), "SELECT coalesce(current_setting('pgtest.mark', true), '')").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name != "set-by-a" {
		t.Errorf("b's transaction saw pgtest.mark %q: not on a's server connection, so not transaction pooling", name)
	}
}

func TestBouncerLetsInAnyRole(t *testing.T) {
	url := pgtest.NewBouncedDatabase(t)
	a := connect(t, url)
	if _, err := a.Exec(context.Background(), "CREATE ROLE pgtest_someone LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgtest.Get(t).Exec("DROP ROLE pgtest_someone") })
	b := connect(t, strings.Replace(url, "postgres@", "pgtest_someone@", 1))
	var who string
	if err := b.QueryRow(context.Background(), "SELECT current_user").Scan(&who); err != nil || who != "pgtest_someone" {
		t.Fatal(who, err)
	}
}

// A private cluster goes down, ending every session, and comes back with
// what it committed; while it is down nothing connects. The shared
// cluster refuses Down.
func TestPrivateClusterDownAndUp(t *testing.T) {
	if err := pgtest.Get(t).Down(pgtest.Fast); err == nil {
		t.Fatal("Down of the shared cluster: no error")
	}
	c := pgtest.Private(t)
	if err := c.Exec("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		sig  syscall.Signal
	}{{"fast", pgtest.Fast}, {"immediate", pgtest.Immediate}} {
		conn := connect(t, c.SocketURL("postgres"))
		if err := c.Down(mode.sig); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(context.Background(), "SELECT 1"); err == nil {
			t.Fatalf("%s: a session went on after Down", mode.name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if down, err := pgx.Connect(ctx, c.SocketURL("postgres")); err == nil {
			down.Close(context.Background())
			t.Fatalf("%s: connected while the server was down", mode.name)
		}
		cancel()
		if err := c.Up(); err != nil {
			t.Fatal(err)
		}
		if n := queryInt(t, connect(t, c.SocketURL("postgres")), "SELECT n FROM kept"); n != 7 {
			t.Fatalf("%s: after Up the table holds %d, want 7", mode.name, n)
		}
	}
}
