package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// follower is a running export --follow: the complete lines it wrote so
// far (a record cut short by a kill is left out, as a receiver leaves it),
// and its standard error.
type follower struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	more   chan struct{} // signalled on every line and at the end of the output
	done   chan struct{} // closed when the output ended
	stderr bytes.Buffer
}

// startFollower starts lockledger ARGS... (export --follow ...) on root with env.
func startFollower(t *testing.T, root string, env []string, args ...string) *follower {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := clitest.Command(ctx, root, args...)
	c.Env = append(c.Env, env...)
	f := &follower{cmd: c, more: make(chan struct{}, 1), done: make(chan struct{})}
	c.Stderr = &syncWriter{mu: &f.mu, w: &f.stderr}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go f.read(out)
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	return f
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (f *follower) read(out io.Reader) {
	defer close(f.done)
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return // a last line without its newline is not a record
		}
		f.mu.Lock()
		f.lines = append(f.lines, strings.TrimSuffix(line, "\n"))
		f.mu.Unlock()
		select {
		case f.more <- struct{}{}:
		default:
		}
	}
}

// snapshot is the lines read so far.
func (f *follower) snapshot() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lines...)
}

// await waits until ok holds of the lines read, failing the test when the
// follower's output ends first or within a minute.
func (f *follower) await(t *testing.T, what string, ok func(lines []string) bool) []string {
	t.Helper()
	return f.awaitWithin(t, time.Minute, what, ok)
}

// awaitWithin is await within d.
func (f *follower) awaitWithin(t *testing.T, d time.Duration, what string, ok func(lines []string) bool) []string {
	t.Helper()
	timeout := time.After(d)
	for {
		if lines := f.snapshot(); ok(lines) {
			return lines
		}
		select {
		case <-f.more:
		case <-f.done:
			if lines := f.snapshot(); ok(lines) {
				return lines
			}
			t.Fatalf("the follower's output ended before %s; stderr:\n%s", what, f.errText())
		case <-timeout:
			t.Fatalf("no %s within %s; %d lines; stderr:\n%s", what, d, len(f.snapshot()), f.errText())
		}
	}
}

func (f *follower) errText() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stderr.String()
}

// stop sends sig and waits for the follower to exit; it returns the exit
// code (-1 for a kill) and every complete line.
func (f *follower) stop(t *testing.T, sig syscall.Signal) (int, []string) {
	t.Helper()
	if err := f.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	<-f.done
	err := f.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, f.snapshot()
}

// streamLine is a JSONL stream line as a receiver reads it.
type streamLine struct {
	Seq        *int64          `json:"seq"`
	Hash       string          `json:"hash"`
	Leaf       string          `json:"leaf"`
	Body       json.RawMessage `json:"body"`
	Checkpoint *string         `json:"checkpoint"`
	Tree       json.RawMessage `json:"tree"`
}

func parseStream(t *testing.T, lines []string) []streamLine {
	t.Helper()
	out := make([]streamLine, len(lines))
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &out[i]); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
		}
	}
	return out
}

// lastEventSeq is the seq of the last event line (0 when there is none).
func lastEventSeq(ls []streamLine) int64 {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Seq != nil {
			return *ls[i].Seq
		}
	}
	return 0
}

func hasSeq(want int64) func([]string) bool {
	return func(lines []string) bool {
		for i := len(lines) - 1; i >= 0; i-- {
			var l streamLine
			if json.Unmarshal([]byte(lines[i]), &l) == nil && l.Seq != nil && *l.Seq >= want {
				return true
			}
		}
		return false
	}
}
