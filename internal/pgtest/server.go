package pgtest

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/proc"
)

// server is a server program this package started as its direct child
// (postgres, pgbouncer): exited is closed once it has ended.
type server struct {
	name   string
	cmd    *exec.Cmd
	quit   syscall.Signal // its immediate shutdown
	exited chan struct{}
}

// startServer starts cmd, the program name, whose immediate shutdown is quit.
func startServer(name string, cmd *exec.Cmd, quit syscall.Signal) (*server, error) {
	waited, err := proc.StartLocked(cmd) // see serverAttr's Pdeathsig
	if err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, quit: quit, exited: make(chan struct{})}
	go func() {
		<-waited
		close(s.exited)
	}()
	return s, nil
}

// awaitReady waits until try succeeds, or the server exits, or
// startTimeout passes.
func (s *server) awaitReady(try func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		err := try(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited during start: %v", s.name, s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %v", s.name, startTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop shuts the server down at once (quit), and kills it if it ignores
// that for 30 s. A nil server (never started) has nothing to stop.
func (s *server) stop() error {
	if s == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.cmd.Process.Signal(s.quit)
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s ignored %s for 30s; killed", s.name, unix.SignalName(s.quit))
	}
}
