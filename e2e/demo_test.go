package e2e

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/clitest"
)

// TestDemoIsATranscriptOnStdout: make demo > file reads as a transcript:
// every command is a "$ lockledger ..." line on stdout, before its output,
// and the tour shows run, --wait, a shared lock, who and the HTML page.
func TestDemoIsATranscriptOnStdout(t *testing.T) {
	t.Parallel()
	clitest.NeedBinary(t, "bash", "jq")
	demo, err := filepath.Abs("../scripts/demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", demo, clitest.Bin())
	caller := t.TempDir()
	c.Env = clitest.Env(caller, "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	start := time.Now()
	if err := c.Run(); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("the demo took %v", time.Since(start).Round(time.Millisecond))
	// The tour's throwaway root is neither signed with nor pinned in the
	// caller's trust store.
	if _, err := os.Stat(clitest.TrustDir(caller)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the demo wrote the caller's trust store %s (%v)", clitest.TrustDir(caller), err)
	}
	out, errOut := stdout.String(), stderr.String()
	if strings.Contains(errOut, "$ lockledger") {
		t.Errorf("command lines on stderr:\n%s", errOut)
	}
	lines := strings.Split(out, "\n")
	// command returns the index of the first "$ lockledger" line holding each of words.
	command := func(words ...string) int {
		for i, l := range lines {
			if !strings.HasPrefix(l, "$ lockledger ") {
				continue
			}
			found := true
			for _, w := range words {
				found = found && strings.Contains(l, w)
			}
			if found {
				return i
			}
		}
		t.Errorf("no command line with %q in the transcript:\n%s", words, out)
		return -1
	}
	// after says what follows command i, up to the next command or step.
	after := func(i int) string {
		if i < 0 {
			return ""
		}
		var b strings.Builder
		for _, l := range lines[i+1:] {
			if strings.HasPrefix(l, "$ lockledger ") || strings.HasPrefix(l, "# ") {
				break
			}
			b.WriteString(l + "\n")
		}
		return b.String()
	}
	if got := after(command("lockledger run nightly-etl ", " -- sh -c ")); !strings.Contains(got, "etl: holding nightly-etl with fencing token") {
		t.Errorf("run's command printed %q", got)
	}
	if got := after(command("lockledger acquire deploy-prod ", "--wait")); !strings.HasPrefix(got, "req_") {
		t.Errorf("acquire --wait printed %q, not a request id", got)
	}
	command("lockledger acquire reports-db ", "--shared", "reader-1")
	command("lockledger acquire reports-db ", "--shared", "reader-2")
	if got := after(command("lockledger status reports-db")); !strings.Contains(got, "shared by 2") {
		t.Errorf("status of the shared lock: %q", got)
	}
	if got := after(command("lockledger who deploy-prod --at ")); !strings.Contains(got, ": held") || !strings.Contains(got, "actor          demo") {
		t.Errorf("who: %q", got)
	}
	command("lockledger timeline --format html -o ")
	// Every refusal the tour meets is shown with its exit code and what
	// it means, and nothing in the script swallows an outcome.
	script, err := os.ReadFile(demo)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(script), "|| true") {
		t.Errorf("%s hides an outcome behind || true", demo)
	}
	refusal := regexp.MustCompile(`^exit [0-9]+: \S`)
	for _, l := range lines {
		if strings.HasPrefix(l, "exit ") && !refusal.MatchString(l) {
			t.Errorf("a refusal without its meaning: %q", l)
		}
	}
	if got := after(command("lockledger release nightly --request-id nightly-1")); !strings.HasPrefix(got, "exit 5: ") {
		t.Errorf("the release of a holding another tool's file displaced: %q, want exit 5 and what it means", got)
	}
	if got := after(command("lockledger acquire nightly --force")); !strings.HasPrefix(got, "exit 3: ") {
		t.Errorf("acquire --force of a live foreign lock: %q, want exit 3 and what it means", got)
	}
	command("lockledger release db-migrate --request-id ")
	for _, l := range lines {
		if strings.HasPrefix(l, "# ") && strings.Contains(l, "stopped heartbeating") {
			t.Errorf("a step calls another tool's stale file a holder that stopped heartbeating: %q", l)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("escape codes in piped stdout:\n%q", out)
	}

	var page, root string
	for _, l := range lines {
		if p, ok := strings.CutPrefix(l, "timeline page: "); ok {
			page, _, _ = strings.Cut(p, " (kept")
		}
		if p, ok := strings.CutPrefix(l, "demo root was "); ok {
			root, _, _ = strings.Cut(p, " (removed")
		}
	}
	if !strings.HasPrefix(page, tmp+string(filepath.Separator)) || !strings.HasPrefix(root, tmp+string(filepath.Separator)) {
		t.Fatalf("the transcript does not say where the page (%q) and the root (%q) are, under TMPDIR %s", page, root, tmp)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("the timeline page: %v", err)
	}
	for _, want := range []string{"<html", "deploy-prod", "reports-db", "nightly-etl"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("the timeline page %s lacks %q", page, want)
		}
	}
	if _, err := os.Lstat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the demo root %s was left behind: %v", root, err)
	}
}
