package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockledger/lockledger/internal/clitest"
)

// A command waiting for its input, a --secret-file that is a FIFO no one
// has opened to write yet, or standard input (-) that no one writes to (a
// terminal where the user has not typed the secret), ends on INT or TERM
// as cat would, with 128+N and nothing recorded: a read(2) that the
// process's signal handler restarts is never ended by the signal, and
// neither Ctrl-C nor timeout(1) could stop it.
func TestReadingInputEndsOnASignal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--print-release-secret").Stdout)
	rid, _, _ = strings.Cut(rid, "\n")
	before := clitest.EventCount(t, root)
	fifo := filepath.Join(t.TempDir(), "secret.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		sig        syscall.Signal
	}{
		{"a FIFO no one writes to", fifo, syscall.SIGTERM},
		{"standard input no one writes to", "-", syscall.SIGINT},
	} {
		t.Run(c.name, func(t *testing.T) {
			endsOnASignal(t, root, c.sig, "release", "deploy", "--request-id", rid, "--secret-file", c.file)
		})
	}
	if n := clitest.EventCount(t, root); n != before {
		t.Fatalf("releases ended before their secret was read wrote %d events", n-before)
	}
}

// A command waiting for a key, checkpoint or signer file that is a FIFO no
// one has opened to write yet, or for what it reads from a pipe no one
// writes to (verify --file's export, fence write's data), ends on INT or
// TERM as cat would, with 128+N (os.ReadFile's open and the plain reads
// waited on past both signals, and timeout(1) alone could not end them),
// fence write leaving no temporary file; and one whose read gave up on the
// signal reports it, where verify-proof's report crashed on it.
func TestEveryCommandWaitingForInputEndsOnASignal(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fifo := filepath.Join(t.TempDir(), "key.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	vkey := strings.TrimSpace(clitest.Must(t, 0, root, "keygen", "--name", "fifo-test", "-o", filepath.Join(t.TempDir(), "signing.key")).Stdout)
	fenced := t.TempDir()
	t.Cleanup(func() {
		if left, _ := os.ReadDir(fenced); len(left) > 0 {
			t.Errorf("fence write ended by a signal left %s", left[0].Name())
		}
	})
	for _, c := range []struct {
		name string
		args []string
	}{
		{"verify --verifier-key", []string{"verify", "--verifier-key", fifo}},
		{"verify --checkpoint", []string{"verify", "--verifier-key", vkey, "--checkpoint", fifo}},
		{"verify --signers", []string{"verify", "--signers", fifo}},
		{"verify --witness-key", []string{"verify", "--witness-key", fifo}},
		{"trust pin --verifier-key", []string{"trust", "pin", "--ledger-id", "fifo-test", "--verifier-key", fifo}},
		{"prove extends", []string{"prove", "extends", fifo, fifo}},
		{"verify-proof", []string{"verify-proof", fifo}},
		{"verify-proof --json", []string{"--json", "verify-proof", "--verifier-key", vkey, fifo}},
		{"verify --file /dev/stdin", []string{"verify", "--file", "/dev/stdin"}},
		{"fence write", []string{"fence", "write", filepath.Join(fenced, "data"), "--token", "1", "--lock", "deploy"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
				endsOnASignal(t, root, sig, c.args...)
			}
		})
	}
}

// endsOnASignal runs the CLI with args, its standard input a pipe no one
// writes to, and checks that sig ends it with 128+N, and with no crash,
// once it waits for its input.
func endsOnASignal(t *testing.T, root string, sig syscall.Signal, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := clitest.Command(ctx, root, args...)
	// Standard input: a pipe whose write end the test keeps open.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd.Stdin = r
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The command is waiting for its input once it has opened the
	// FIFO or reads its standard input; a signal before it handles
	// signals would end it by the default action, proving nothing.
	awaitReading(t, cmd.Process.Pid)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("%s still waited for its input 20 s after %v", strings.Join(args, " "), sig)
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) || strings.Contains(stderr.String(), "panic") {
		t.Fatalf("%s ended by %v: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), sig, code, 128+int(sig), stderr.String())
	}
}

// awaitReading waits until process pid waits for its input: one of its
// threads sleeps in the kernel where a read of a pipe or a terminal, the
// open of a FIFO no one writes to, or poll(2) sleeps.
func awaitReading(t *testing.T, pid int) {
	t.Helper()
	waits := []string{"wait_for_partner", "pipe_read", "anon_pipe_read", "do_sys_poll", "poll_schedule_timeout", "do_poll"}
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tasks, _ := os.ReadDir(dir)
		for _, task := range tasks {
			// The kernel's function, with a suffix of its compiler's
			// (poll_schedule_timeout.constprop.0).
			b, _ := os.ReadFile(dir + task.Name() + "/wchan")
			if slices.Contains(waits, strings.SplitN(string(b), ".", 2)[0]) {
				return
			}
		}
	}
	t.Fatalf("process %d never waited for its input", pid)
}

// TestInputThatIsADirectoryIsBadInput: a directory given where a file is
// read (verify-proof's FILE, release --secret-file), or as the standard
// input read for "-" (< DIR), is bad input, exit 2, naming the argument,
// as a missing file is.
func TestInputThatIsADirectoryIsBadInput(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	if r := clitest.Must(t, 2, root, "verify-proof", dir); !strings.Contains(r.Stderr, `FILE "`+dir+`"`) || !strings.Contains(r.Stderr, "directory") {
		t.Errorf("verify-proof of a directory: %s", r.Stderr)
	}
	rid := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--print-release-secret").Stdout)
	rid, _, _ = strings.Cut(rid, "\n")
	if r := clitest.Must(t, 2, root, "release", "deploy", "--request-id", rid, "--secret-file", dir); !strings.Contains(r.Stderr, "--secret-file") {
		t.Errorf("release --secret-file of a directory: %s", r.Stderr)
	}
	in, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	c := clitest.Command(t.Context(), root, "verify-proof", "-")
	c.Stdin = in
	if r := clitest.Exec(t, c); r.Code != 2 || !strings.Contains(r.Stderr, `FILE "-"`) || !strings.Contains(r.Stderr, "directory") {
		t.Errorf("verify-proof - < a directory: exit %d, %s", r.Code, r.Stderr)
	}
}

// TestASecretTypedAtATerminalEndsWithEnter: release --secret-file - at a
// terminal takes the secret's line once Enter ends it, as a password
// prompt does, rather than waiting for Ctrl-D (the end of the terminal's
// input) with the secret typed; and the secret is typed unseen, the
// terminal's echo off while it is read, and on again after.
func TestASecretTypedAtATerminalEndsWithEnter(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	out := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--print-release-secret").Stdout)
	rid, secret, _ := strings.Cut(out, "\n")
	s := onTerminal(t, root, `"$0" "$@"; echo "after-release-$?"; read wait`, "release", "deploy", "--request-id", rid, "--secret-file", "-")
	for s.echoing() {
		select {
		case <-s.ctx.Done():
			t.Fatalf("the terminal still echoes what is typed while release waits for the secret:\n%s", s.terminal())
		case err := <-s.exited:
			t.Fatalf("the script exited (%v):\n%s", err, s.terminal())
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.typed(secret)
	s.await("after-release-0")
	if strings.Contains(s.terminal(), secret) {
		t.Fatalf("the secret is shown on the terminal:\n%s", s.terminal())
	}
	if !s.echoing() {
		t.Fatal("the terminal's echo was left off")
	}
	if rel := lastBody(t, root, "lock_released"); rel["request_id"] != rid {
		t.Fatalf("released %v, want the holding %s", rel, rid)
	}
	s.typed("")
}

// A secret typed at a terminal stays unseen after Ctrl-Z and fg. A
// job-control shell puts its own modes back (echo on) when Ctrl-Z stops
// the job, and fg continues the job without giving it its modes again:
// bash does (bash --noediting -i, by hand), dash does not, so the script
// here is bash's part played by the test. release showed the rest of the
// secret as it was typed after fg.
func TestASecretTypedAtATerminalStaysUnseenAfterCtrlZAndFg(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	out := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--print-release-secret").Stdout)
	rid, secret, _ := strings.Cut(out, "\n")
	s := onTerminal(t, root, `set -m; "$0" "$@"; echo "job-stopped"; read go; fg; echo "after-release-$?"; read wait`,
		"release", "deploy", "--request-id", rid, "--secret-file", "-")
	echoes := func(want bool, why string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.echoing() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the terminal's echo is %v, want %v:\n%s", why, !want, want, s.terminal())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	echoes(false, "release waits for the secret")
	if _, err := s.control.Write([]byte{0x1a}); err != nil { // Ctrl-Z (VSUSP)
		t.Fatal(err)
	}
	s.await("job-stopped")
	shell, err := unix.IoctlGetTermios(int(s.control.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	shell.Lflag |= unix.ECHO
	if err := unix.IoctlSetTermios(int(s.control.Fd()), unix.TCSETS, shell); err != nil {
		t.Fatal(err)
	}
	s.typed("go")
	echoes(false, "release continued by fg waits for the secret")
	s.typed(secret)
	s.await("after-release-0")
	if strings.Contains(s.terminal(), secret) {
		t.Fatalf("the secret is shown on the terminal:\n%s", s.terminal())
	}
	echoes(true, "release has read the secret")
	if rel := lastBody(t, root, "lock_released"); rel["request_id"] != rid {
		t.Fatalf("released %v, want the holding %s", rel, rid)
	}
	s.typed("")
}

// Ctrl-\ while a secret is typed at a terminal ends the read as Ctrl-C
// does, 128+3 and the echo on again: the Go runtime's own end of a QUIT,
// a stack dump over the terminal and exit 2, left the echo off, and a
// shell took those modes for its own after a job that exited.
func TestCtrlBackslashWhileASecretIsTypedPutsTheEchoBack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	out := strings.TrimSpace(clitest.Must(t, 0, root, "acquire", "deploy", "--holder", "none", "--print-release-secret").Stdout)
	rid, _, _ := strings.Cut(out, "\n")
	// The script, in the terminal's foreground group too, outlives the
	// QUIT (a handler, which the command does not inherit).
	s := onTerminal(t, root, `trap : QUIT; "$0" "$@"; echo "after-release-$?"; read wait`, "release", "deploy", "--request-id", rid, "--secret-file", "-")
	for s.echoing() {
		select {
		case <-s.ctx.Done():
			t.Fatalf("the terminal still echoes what is typed while release waits for the secret:\n%s", s.terminal())
		case err := <-s.exited:
			t.Fatalf("the script exited (%v):\n%s", err, s.terminal())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := s.control.Write([]byte("half-typ\x1c")); err != nil { // Ctrl-\ (VQUIT)
		t.Fatal(err)
	}
	s.await("after-release-131")
	if !s.echoing() {
		t.Fatalf("the terminal's echo was left off:\n%s", s.terminal())
	}
	if strings.Contains(s.terminal(), "goroutine ") {
		t.Fatalf("a stack dump on the terminal:\n%s", s.terminal())
	}
	s.typed("")
	s.exit()
	if st := statusJSON(t, root, "deploy")["state"]; st != "held" {
		t.Fatalf("the lock is %v after the read was ended, want held", st)
	}
}
