// Package pgtest gives tests a real, throwaway PostgreSQL server: one
// cluster per test binary, started on first use in a temporary directory,
// reachable on a unix socket there and on 127.0.0.1, and stopped by Main.
// Its data directory is a copy of one initdb made once per user and
// PostgreSQL installation, kept in the temporary directory.
// It also offers a TCP proxy that tests can cut or hang to simulate losing
// the database, and a PgBouncer in transaction pooling mode in front of the
// cluster (GetBouncer). A test that restarts its server or takes it away
// for a while starts a cluster of its own (Private; Down, then Up), so
// that the other tests' cluster stays up. Programs that are not tests
// (the benchmarks) start and stop a cluster of their own with StartCluster
// and Stop.
//
// A package that uses it must route its TestMain through Main:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"
)

// Superuser is the role every URL handed out by this package connects as;
// initdb creates it, and trust authentication lets it in without a password.
const Superuser = "postgres"

// MaxConnections is the cluster's max_connections: room for a few dozen
// concurrent CLI processes, each with its own connection, plus the tests'.
const MaxConnections = 300

// startTimeout bounds initdb plus the server's start; both take a second or
// two on an idle machine, so this only trips on a server that cannot start.
const startTimeout = 2 * time.Minute

// Cluster is the running server of this test binary.
type Cluster struct {
	Dir       string // temporary directory: data/, the socket, postgres.log
	SocketDir string // unix_socket_directories
	Port      int    // 127.0.0.1 port, also the socket's number
	BinDir    string // where initdb, pg_ctl and postgres were found

	srv  *server // postgres
	logf string
	// cred and args start postgres again after Down (Up).
	cred *syscall.Credential
	args []string

	mu    sync.Mutex // serialises use of admin
	admin *pgx.Conn

	bouncer *Bouncer // started by StartBouncer, stopped first by Stop
}

// ErrNoServer is returned by StartCluster when the PostgreSQL server
// programs (initdb, postgres) are not installed.
var ErrNoServer = errors.New("PostgreSQL server programs not found")

var (
	mainRunning atomic.Bool
	once        sync.Once
	shared      *Cluster
	sharedErr   error
	dbSeq       atomic.Int64
)

// Main runs the tests of m and then stops the cluster, if one was started,
// and removes its directory; it does not return. Use it as TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main for a TestMain that has more to do: it returns m.Run's code
// after stopping the cluster.
func Run(m *testing.M) int {
	mainRunning.Store(true)
	defer mainRunning.Store(false)
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Get returns the cluster of this test binary, starting it on first use.
// It skips the test loudly when the PostgreSQL server programs are not
// installed, and fails it instead under CI (LOCKLEDGER_CI=1).
func Get(t testing.TB) *Cluster {
	t.Helper()
	if !mainRunning.Load() {
		// Without Main nothing would stop the server before the binary exits.
		t.Fatal("pgtest: this package's TestMain must call pgtest.Main(m) (or pgtest.Run)")
	}
	once.Do(func() { shared, sharedErr = startCluster(testSettings...) })
	started(t, "PostgreSQL", sharedErr, ErrNoServer)
	return shared
}

// started ends t where the start of what a test needs failed: it skips
// loudly where err matches missing (the program is not installed), and
// fails instead under CI (LOCKLEDGER_CI=1), which installs it.
func started(t testing.TB, what string, err, missing error) {
	t.Helper()
	if errors.Is(err, missing) {
		if os.Getenv("LOCKLEDGER_CI") == "1" {
			t.Fatalf("%v, and CI requires every test to run", err)
		}
		t.Skipf("SKIPPED: %v, so this test cannot run here (CI installs it)", err)
	}
	if err != nil {
		t.Fatalf("pgtest: starting %s: %v", what, err)
	}
}

// NewDatabase creates a fresh, empty database in the cluster, dropped when
// the test ends, and returns a URL reaching it over the unix socket.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return Get(t).SocketURL(CreateDatabase(t))
}

// CreateDatabase creates a fresh, empty database, dropped (forcibly, so
// connections a failed test left open do not block it) when the test ends,
// and returns its name.
func CreateDatabase(t testing.TB) string {
	t.Helper()
	c := Get(t)
	name := dbName(t.Name(), dbSeq.Add(1))
	if err := c.CreateDatabase(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.DropDatabase(name); err != nil {
			t.Error(err)
		}
	})
	return name
}

// CreateDatabase creates the empty database name in the cluster.
func (c *Cluster) CreateDatabase(name string) error {
	if err := c.Exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("pgtest: creating database %s: %w", name, err)
	}
	return nil
}

// DropDatabase drops database name if it exists, forcibly, so that
// connections left open do not block it.
func (c *Cluster) DropDatabase(name string) error {
	if err := c.Exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
		return fmt.Errorf("pgtest: dropping database %s: %w", name, err)
	}
	return nil
}

// TCPURL returns a URL reaching database name on 127.0.0.1.
func TCPURL(t testing.TB, name string) string {
	t.Helper()
	return URLAt(TCPAddr(t), name)
}

// TCPAddr returns the cluster's 127.0.0.1 address, host:port: the target
// to put a Proxy in front of.
func TCPAddr(t testing.TB) string {
	t.Helper()
	return Get(t).TCPAddr()
}

// URLAt returns a URL reaching database name at addr (host:port), such as a
// Proxy's address. The server has no TLS, so the URL does not ask for it.
func URLAt(addr, name string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Host: addr, Path: "/" + name,
		RawQuery: "sslmode=disable"}
	return u.String()
}

// SocketURL returns a URL reaching database name over the unix socket.
func (c *Cluster) SocketURL(name string) string {
	q := url.Values{"host": {c.SocketDir}, "port": {strconv.Itoa(c.Port)}}
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Path: "/" + name, RawQuery: q.Encode()}
	return u.String()
}

// LogPath returns the server's log file (its stdout and stderr).
func (c *Cluster) LogPath() string { return c.logf }

// TCPAddr returns the cluster's 127.0.0.1 address, host:port.
func (c *Cluster) TCPAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port))
}

// Exec runs one statement as the superuser in the postgres database. A
// connection the server ended meanwhile (a backend's crash ends every
// session) is made again, and the statement sent again where it was not
// sent at all.
func (c *Cluster) Exec(sql string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for retried := false; ; retried = true {
		if c.admin == nil || c.admin.IsClosed() {
			conn, err := pgx.Connect(context.Background(), c.SocketURL("postgres"))
			if err != nil {
				return err
			}
			c.admin = conn
		}
		_, err := c.admin.Exec(context.Background(), sql)
		if err == nil || retried || !pgconn.SafeToRetry(err) {
			return err
		}
	}
}

// dbName makes a database name that says which test made it and is unique
// within the binary, inside PostgreSQL's 63-byte identifier limit.
func dbName(test string, n int64) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	return fmt.Sprintf("t%d_%s", n, s)
}

// findBinaries returns the directory holding initdb, pg_ctl and postgres:
// PATH when it has all three, else the highest version under
// /usr/lib/postgresql (Debian's layout, which leaves them off PATH).
func findBinaries() (string, error) {
	names := []string{"initdb", "pg_ctl", "postgres"}
	var dir string
	for i, name := range names {
		p, err := exec.LookPath(name)
		if err != nil {
			break
		}
		if p, err = filepath.EvalSymlinks(p); err != nil {
			break
		}
		if i == 0 {
			dir = filepath.Dir(p)
		} else if filepath.Dir(p) != dir {
			// Mixed installations: trust the versioned directory instead.
			break
		}
		if i == len(names)-1 {
			return dir, nil
		}
	}
	if dir := latestBinDir("/usr/lib/postgresql", names); dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("initdb, pg_ctl and postgres are neither on PATH nor under /usr/lib/postgresql/*/bin")
}

// latestBinDir returns root/VERSION/bin for the highest VERSION (compared
// as numbers: 9.6 < 15) whose bin holds every one of names, or "".
func latestBinDir(root string, names []string) string {
	entries, _ := os.ReadDir(root)
	type cand struct {
		ver []int
		dir string
	}
	var cands []cand
	for _, e := range entries {
		var ver []int
		for f := range strings.SplitSeq(e.Name(), ".") {
			n, err := strconv.Atoi(f)
			if err != nil {
				ver = nil
				break
			}
			ver = append(ver, n)
		}
		if ver == nil {
			continue
		}
		dir := filepath.Join(root, e.Name(), "bin")
		all := true
		for _, name := range names {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
				all = false
			}
		}
		if all {
			cands = append(cands, cand{ver, dir})
		}
	}
	if len(cands) == 0 {
		return ""
	}
	return slices.MaxFunc(cands, func(a, b cand) int { return slices.Compare(a.ver, b.ver) }).dir
}

// serverCredential returns whom the server programs must run as: initdb
// and postgres refuse to run as root, so under root they run as the
// postgres system user, or nobody when there is none. nil means as we are.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return nil, fmt.Errorf("running as root, and neither a postgres nor a nobody user exists to run the server as")
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// freePort returns a 127.0.0.1 port nobody listens on right now. Another
// process could take it before the server binds it; start then fails with
// the server's own message rather than silently talking to a stranger.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartCluster starts a throwaway cluster in a new temporary directory; the
// caller must Stop it. Tests use Get instead, which shares one cluster per
// test binary. The error matches ErrNoServer when the server programs are
// not installed. If the program dies without calling Stop, the kernel stops
// the server (see command), but its directory is left behind.
func StartCluster() (*Cluster, error) { return startCluster() }

// testSettings are the server settings of a test binary's cluster (Get).
// It lives only as long as the binary and never outlives a machine's
// crash, so it does not sync its writes to the disk (a killed server still
// recovers from what the kernel holds) nor vacuum in the background, which
// starts a worker in each of the tests' many short-lived databases once a
// minute. The benchmarks' cluster (StartCluster) keeps the defaults.
var testSettings = []string{"fsync=off", "full_page_writes=off", "autovacuum=off"}

// startCluster is StartCluster with server settings (name=value).
func startCluster(settings ...string) (*Cluster, error) {
	binDir, err := findBinaries()
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoServer, err)
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	// A unix socket path must fit in about 100 bytes; a long TMPDIR would
	// not leave room, so fall back to /tmp.
	base := os.TempDir()
	if len(base) > 60 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, SocketDir: dir, BinDir: binDir,
		logf: filepath.Join(dir, "postgres.log")}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	if cred != nil {
		// The server writes its data, socket and log here as that user.
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if c.Port, err = freePort(); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := c.initData(cred, data); err != nil {
		return nil, err
	}
	c.cred = cred
	c.args = []string{"-D", data, "-p", strconv.Itoa(c.Port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + c.SocketDir,
		"-c", "max_connections=" + strconv.Itoa(MaxConnections)}
	for _, s := range settings {
		c.args = append(c.args, "-c", s)
	}
	if err := c.Up(); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// Up starts the server on the cluster's data directory, port and socket,
// and waits until it accepts connections: at the start, and again after
// Down.
func (c *Cluster) Up() error {
	logFile, err := os.OpenFile(c.logf, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// postgres runs as our direct child, not under pg_ctl, so that the
	// kernel can stop it when this test binary dies without running Main
	// (killed, or timed out): see Pdeathsig in command.
	cmd := c.command(c.cred, "postgres", c.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if c.srv, err = startServer("postgres", cmd, syscall.SIGQUIT); err != nil {
		return err
	}
	if err := c.awaitReady(); err != nil {
		log, _ := os.ReadFile(c.logf)
		return fmt.Errorf("%v\npostgres.log:\n%s", err, log)
	}
	return nil
}

// Shutdown modes for Down, as pg_ctl stop -m names them: the signal the
// postmaster takes each as.
const (
	// Fast terminates every session (SQLSTATE 57P01) and checkpoints.
	Fast = syscall.SIGINT
	// Immediate takes every process down at once, as a crash does; the
	// next start recovers from the write-ahead log.
	Immediate = syscall.SIGQUIT
)

// Down shuts the server down in mode (Fast or Immediate) and waits until
// it has exited; Up starts it again. Only for a cluster of a test's own
// (Private): the shared one serves every test of the binary.
func (c *Cluster) Down(mode syscall.Signal) error {
	if c == shared {
		return errors.New("pgtest: Down of the shared cluster would disturb the other tests: use Private")
	}
	c.mu.Lock()
	if c.admin != nil {
		c.admin.Close(context.Background())
		c.admin = nil
	}
	c.mu.Unlock()
	c.srv.cmd.Process.Signal(mode)
	select {
	case <-c.srv.exited:
		return nil
	case <-time.After(startTimeout):
		return fmt.Errorf("pgtest: postgres still running %v after %s", startTimeout, unix.SignalName(mode))
	}
}

// Private starts a cluster of the test's own, stopped when it ends, for a
// test that shuts its server down (Down) while the others go on with the
// shared one. It skips or fails as Get does.
func Private(t testing.TB) *Cluster {
	t.Helper()
	c, err := startCluster(testSettings...)
	started(t, "PostgreSQL", err, ErrNoServer)
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// initData fills data with a new, empty cluster: a copy of the one initdb
// made for the first cluster of this user and these server programs, kept
// in the temporary directory, as initdb costs a second or more of CPU and
// each test binary that uses PostgreSQL starts a cluster.
func (c *Cluster) initData(cred *syscall.Credential, data string) error {
	initdb := filepath.Join(c.BinDir, "initdb")
	fi, err := os.Stat(initdb)
	if err != nil {
		return err
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s %d %d", initdb, fi.Size(), fi.ModTime().UnixNano()))
	template := filepath.Join(os.TempDir(), fmt.Sprintf("lockledger-pgtest-initdb-%d-%x", os.Geteuid(), key[:8]))
	if !complete(template) {
		if err := c.makeTemplate(cred, template); err != nil {
			return err
		}
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(template, "data"), data).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the initdb template %s: %v\n%s", template, err, out)
	}
	return nil
}

// makeTemplate runs initdb into a new directory renamed to template once
// complete; where another test binary's was renamed there first, that one
// stays.
func (c *Cluster) makeTemplate(cred *syscall.Credential, template string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(template), filepath.Base(template)+".new-")
	if err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chown(tmp, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	initdb := c.command(cred, "initdb", "-D", filepath.Join(tmp, "data"), "-U", Superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	var out bytes.Buffer
	initdb.Stdout, initdb.Stderr = &out, &out
	if err := initdb.Run(); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("initdb: %v\n%s", err, out.Bytes())
	}
	if err := os.Rename(tmp, template); err != nil {
		os.RemoveAll(tmp)
		if !complete(template) {
			return err
		}
	}
	return nil
}

// complete says whether template holds a cluster initdb finished.
func complete(template string) bool {
	for _, f := range []string{"PG_VERSION", "global/pg_control"} {
		if _, err := os.Stat(filepath.Join(template, "data", f)); err != nil {
			return false
		}
	}
	return true
}

// command builds an exec.Cmd for one of the server programs, run as cred,
// in the cluster's directory (a server user may not be allowed into the
// test's working directory).
func (c *Cluster) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.BinDir, name), args...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = serverAttr(cred, syscall.SIGQUIT)
	return cmd
}

// awaitReady waits until the server accepts a connection on its socket,
// or exits, or startTimeout passes. The server announces readiness only in
// its pid file and log, so connecting is the direct way to observe it.
func (c *Cluster) awaitReady() error {
	return c.srv.awaitReady(func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, c.SocketURL("postgres"))
		if err == nil {
			c.admin = conn
		}
		return err
	})
}

// Stop stops the PgBouncer in front of the server, if any, shuts the
// server down immediately (nothing in it is worth a
// checkpoint) and removes its directory.
func (c *Cluster) Stop() error {
	var errs []error
	if c.bouncer != nil {
		errs = append(errs, c.bouncer.stop())
	}
	if c.admin != nil {
		c.admin.Close(context.Background())
	}
	errs = append(errs, c.srv.stop())
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// READMERoles reads the SQL statements of the PostgreSQL set-up (docs/postgresql.md) that concern
// its writer and auditor roles (those naming lockledger_writer or
// lockledger_auditor: their CREATE ROLE, then the grants), from the
// psql here-documents (<<'SQL' ... SQL), one a string, for the tests that
// run them.
func READMERoles(t testing.TB, readme string) []string {
	t.Helper()
	var out []string
	for _, block := range READMESQL(readme) {
		for _, s := range strings.Split(block, ";") {
			var lines []string
			for _, l := range strings.Split(s, "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
					lines = append(lines, l)
				}
			}
			if q := strings.Join(lines, " "); strings.Contains(q, "lockledger_writer") || strings.Contains(q, "lockledger_auditor") {
				out = append(out, q)
			}
		}
	}
	if len(out) == 0 || !strings.HasPrefix(out[0], "CREATE ROLE lockledger_writer") {
		t.Fatalf("docs/postgresql.md has no psql here-document creating lockledger_writer (found %q)", out)
	}
	return out
}

// READMESQL is the text of every <<'SQL' here-document in readme.
func READMESQL(readme string) []string {
	var out []string
	for rest := readme; ; {
		i := strings.Index(rest, "<<'SQL'\n")
		if i < 0 {
			return out
		}
		rest = rest[i+len("<<'SQL'\n"):]
		end := strings.Index(rest, "\nSQL\n")
		if end < 0 {
			return out
		}
		out = append(out, rest[:end])
		rest = rest[end:]
	}
}

// PID is the process id of the cluster's postgres (the postmaster): its
// children are the backends and the server's own workers. Between Down
// and Up it names a process that has exited.
func (c *Cluster) PID() int { return c.srv.cmd.Process.Pid }
