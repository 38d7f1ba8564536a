package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli"
)

// TestEveryCommandHasAPage: one page per visible command, each carrying
// the command's own text and flags, and the same bytes on a second run.
func TestEveryCommandHasAPage(t *testing.T) {
	t.Setenv("LOCKLEDGER_DATABASE_URL", "postgres://u:hunter2-password@db/ledger")
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
		checkSections(t, c, string(b))
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
	if strings.Contains(string(root), "hunter2-password") {
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

// checkSections: a page is headed with its own name and has EXIT STATUS,
// with every code, and ENVIRONMENT, with the variables of its command.
func checkSections(t *testing.T, c *cobra.Command, page string) {
	t.Helper()
	name := strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-"))
	if !strings.Contains(page, `.TH "`+name+`" "1"`) {
		t.Errorf("%s: not headed %s(1):\n%.200s", c.CommandPath(), name, page)
	}
	exit, env := section(page, "EXIT STATUS"), section(page, "ENVIRONMENT")
	for _, e := range cli.ExitStatuses {
		if !strings.Contains(exit, `\fB`+e.Code+`\fP`) {
			t.Errorf("%s: EXIT STATUS lacks code %s:\n%s", c.CommandPath(), e.Code, exit)
		}
	}
	vars := cli.EnvironmentOf(c)
	if len(vars) == 0 {
		t.Errorf("%s: no environment variable matters to it", c.CommandPath())
	}
	for _, v := range vars {
		if !strings.Contains(env, `\fB`+v.Name+`\fP`) {
			t.Errorf("%s: ENVIRONMENT lacks %s:\n%s", c.CommandPath(), v.Name, env)
		}
	}
	if c.HasParent() && !strings.Contains(env, "lockledger help environment") {
		t.Errorf("%s: ENVIRONMENT does not point to the full list:\n%s", c.CommandPath(), env)
	}
}

// section is the text of page's section title, up to the next one.
func section(page, title string) string {
	_, rest, ok := strings.Cut(page, "\n.SH "+title+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n.SH ")
	return body
}

// TestPagesSayWhatEachCommandReads: the sections differ where the commands do.
func TestPagesSayWhatEachCommandReads(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return section(string(b), "ENVIRONMENT")
	}
	for page, want := range map[string][]string{
		"lockledger.1":         {"LOCKLEDGER_ROOT", "LOCKLEDGER_HOST_ID", "PG*", "LOCKLEDGER_FENCING_TOKEN", "NO_COLOR"},
		"lockledger-acquire.1": {"LOCKLEDGER_ROOT", "XDG_STATE_HOME", "LOCKLEDGER_HOST_ID", "LOCKLEDGER_ACTOR"},
		"lockledger-run.1":     {"LOCKLEDGER_HOST_ID", "LOCKLEDGER_LOCK", "LOCKLEDGER_REQUEST_ID", "LOCKLEDGER_FENCING_TOKEN"},
		"lockledger-version.1": {"NO_COLOR"},
	} {
		env := read(page)
		for _, v := range want {
			if !strings.Contains(env, `\fB`+v+`\fP`) {
				t.Errorf("%s: ENVIRONMENT lacks %s:\n%s", page, v, env)
			}
		}
	}
	for page, not := range map[string][]string{
		"lockledger-acquire.1": {"LOCKLEDGER_FENCING_TOKEN"},
		"lockledger-version.1": {"LOCKLEDGER_ROOT", "LOCKLEDGER_HOST_ID"},
	} {
		env := read(page)
		for _, v := range not {
			if strings.Contains(env, `\fB`+v+`\fP`) {
				t.Errorf("%s: ENVIRONMENT lists %s, which it does not read:\n%s", page, v, env)
			}
		}
	}
}

// TestPageRenders: man (or groff) formats a page without a warning, headed
// with the command's name and with both sections.
func TestPageRenders(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "lockledger-acquire.1")
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("SKIPPED: no groff on this machine, so no page was rendered (install groff to run this test)")
	}
	cmd := exec.Command(groff, "-man", "-ww", "-Tutf8", page)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Fatalf("groff: %v\n%s", err, errOut.String())
	}
	text := regexp.MustCompile(".\b").ReplaceAllString(out.String(), "") // no overstrike for bold
	for _, want := range []string{"LOCKLEDGER-ACQUIRE(1)", "EXIT STATUS", "ENVIRONMENT", "LOCKLEDGER_HOST_ID", "128+N"} {
		if !strings.Contains(text, want) {
			t.Errorf("the rendered page lacks %q:\n%.3000s", want, text)
		}
	}
}
