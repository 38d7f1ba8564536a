package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli"
)

// TestEveryCommandHasAPage: one page per visible command, each carrying
// the command's own text and flags, and the same bytes on a second run.
func TestEveryCommandHasAPage(t *testing.T) {
	t.Setenv("LOCKLEDGER_DATABASE_URL", "postgres://u:secret@db/ledger")
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c.HasParent() {
			return
		}
		n++
		page := filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: %v", c.CommandPath(), err)
			return
		}
		if !strings.Contains(string(b), ".SH NAME") || !strings.Contains(string(b), c.Short[:min(len(c.Short), 20)]) {
			t.Errorf("%s: the page lacks NAME or the command's summary:\n%.400s", page, b)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.Command())
	if n < 10 {
		t.Fatalf("only %d commands walked", n)
	}
	acq, err := os.ReadFile(filepath.Join(dir, "lockledger-acquire.1"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile(filepath.Join(dir, "lockledger.1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(root), "secret") {
		t.Errorf("lockledger.1 shows the environment's database URL")
	}
	if !strings.Contains(string(acq), `\fB--holder\fP`) {
		t.Errorf("lockledger-acquire.1 does not document --holder")
	}
	again := t.TempDir()
	if err := generate(again); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(again, "lockledger-acquire.1"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(acq) {
		t.Errorf("two runs wrote different pages")
	}
}
