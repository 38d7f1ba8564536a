package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

// A pgbouncer that dies on its own (here SIGKILLed, as a FATAL exit
// would end it) is started again on the same port, and a client then
// gets through it to the server; Stop stops the one running then, and no
// other is started after it.
func TestBouncerIsStartedAgainWhenItDies(t *testing.T) {
	c := Private(t)
	b, err := c.StartBouncer()
	started(t, "pgbouncer", err, ErrNoBouncer)
	through := func() error { return throughBouncer(b) }
	for range 2 {
		b.mu.Lock()
		first := b.srv
		b.mu.Unlock()
		if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-first.exited
		if !within30s(func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.srv != first
		}) {
			t.Fatal("pgbouncer was not started again within 30 s of its death")
		}
		if err := through(); err != nil {
			t.Fatalf("through the pgbouncer started again: %v", err)
		}
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	default:
		t.Fatal("the supervisor still runs after stop")
	}
	if err := through(); err == nil {
		t.Fatal("a client got through after stop: pgbouncer was started again")
	}
}

// within30s reports whether cond held within 30 s, polled.
func within30s(cond func() bool) bool {
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// logSays is whether b's log holds what.
func logSays(b *Bouncer, what string) func() bool {
	return func() bool {
		log, _ := os.ReadFile(b.log)
		return strings.Contains(string(log), what)
	}
}

// awaitThrough fails t unless a query passes through b within 30 s of
// its port's release.
func awaitThrough(t *testing.T, b *Bouncer) {
	t.Helper()
	var last error
	if !within30s(func() bool { last = throughBouncer(b); return last == nil }) {
		t.Fatalf("pgbouncer did not come back within 30 s of its port's release: %v", last)
	}
}

// throughBouncer passes a query through b to the server.
func throughBouncer(b *Bouncer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, b.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

// A pgbouncer that dies while another socket holds its port (here one
// bound and not listening, as the local end of a client's connection
// is) cannot be started again then: it exits ("nowhere to listen on").
// It is tried again until the port is free, and comes back; before, the
// supervisor gave up after that one try, and every later test behind it
// failed with "connection refused". A stop meanwhile ends the tries.
func TestBouncerIsStartedAgainOnceItsPortIsFree(t *testing.T) {
	for _, stopped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stopped=%v", stopped), func(t *testing.T) { startedAgainOnceFree(t, stopped) })
	}
}

// startedAgainOnceFree is TestBouncerIsStartedAgainOnceItsPortIsFree's
// case, stopped or not while the port is held.
func startedAgainOnceFree(t *testing.T, stopped bool) {
	c := Private(t)
	b, err := c.StartBouncer()
	started(t, "pgbouncer", err, ErrNoBouncer)
	b.mu.Lock() // no start again until the port is held
	first := b.srv
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.mu.Unlock()
		t.Fatal(err)
	}
	<-first.exited
	fd, err := holdPort(b.Port)
	b.mu.Unlock()
	if err != nil {
		t.Fatalf("holding the port of the dead pgbouncer: %v", err)
	}
	if !within30s(logSays(b, "nowhere to listen on")) {
		unix.Close(fd)
		t.Fatalf("no pgbouncer was started on the port held within 30 s; its log's end:\n%s", b.logTail())
	}
	if stopped {
		if err := b.stop(); err != nil {
			t.Error(err)
		}
	}
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	if stopped {
		// stop has returned: no supervisor is left to start one.
		if err := throughBouncer(b); err == nil {
			t.Fatal("a client got through after stop: pgbouncer was started again")
		}
		return
	}
	awaitThrough(t, b)
}

// A pgbouncer started again while another program listens on its port
// (a listener's bind to port 0 can be given a port just freed) exits,
// unable to listen, and is not taken for one that runs: before, the
// supervisor's check that it listened reached the other program, and it
// started pgbouncers one after the other, with no wait, for as long as
// the port was another's. Once the port is free, it comes back.
func TestBouncerStartedAgainIsNotAnotherProgramOnItsPort(t *testing.T) {
	c := Private(t)
	b, err := c.StartBouncer()
	started(t, "pgbouncer", err, ErrNoBouncer)
	b.mu.Lock() // no start again until the port is another's
	first := b.srv
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.mu.Unlock()
		t.Fatal(err)
	}
	<-first.exited
	other, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(b.Port))
	b.mu.Unlock()
	if err != nil {
		t.Fatalf("listening on the port of the dead pgbouncer: %v", err)
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			conn, err := other.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	if !within30s(logSays(b, "nowhere to listen on")) {
		other.Close()
		t.Fatalf("no pgbouncer was started on the port taken within 30 s; its log's end:\n%s", b.logTail())
	}
	b.mu.Lock() // once the start under way is settled
	taken := b.srv != first
	b.mu.Unlock()
	other.Close()
	<-accepted
	if taken {
		t.Fatal("a pgbouncer that could not listen, its port another program's, was taken for one started again")
	}
	awaitThrough(t, b)
}

// holdPort binds a socket to 127.0.0.1:port, and does not listen: as the
// local end of a client's connection does, it keeps a pgbouncer from
// listening there. SO_REUSEADDR is set for the bind alone, past the
// connections of the pgbouncer that had the port (TIME_WAIT), and cleared
// after it, as a client's socket has it.
func holdPort(port int) (int, error) {
	syscall.ForkLock.RLock() // no child started meanwhile inherits it
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, err
	}
	if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err == nil {
		if err = unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: netip.MustParseAddr("127.0.0.1").As4()}); err == nil {
			err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 0)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
