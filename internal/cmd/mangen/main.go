// Command mangen writes lockledger's man pages, one per command, generated
// from the command tree (its Short, Long, Example and flags) and from the
// tables behind `lockledger help exit-codes` and `help environment`, so
// that they cannot drift from --help. make man runs it; the pages are not
// committed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/lockledger/lockledger/cli"
)

func main() {
	dir := flag.String("dir", "man/man1", "directory to write the section 1 pages to")
	flag.Parse()
	if err := generate(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
}

func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Flag defaults read the environment (LOCKLEDGER_ROOT, a database URL
	// with its password): the pages show the built-in ones.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "LOCKLEDGER_") {
			os.Unsetenv(k)
		}
	}
	root := cli.Command()
	// No generation date in the pages: the same tree gives the same files.
	root.DisableAutoGenTag = true
	return writeTree(root, dir)
}

// writeTree writes the page of c and of every command below it, as
// doc.GenManTree does, each headed with its own name.
func writeTree(c *cobra.Command, dir string) error {
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
			continue
		}
		if err := writeTree(sub, dir); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, pageName(c)+".1"), page(c), 0o644)
}

// pageName is lockledger-acquire for lockledger acquire.
func pageName(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

func page(c *cobra.Command) []byte {
	hdr := &doc.GenManHeader{Title: strings.ToUpper(pageName(c)), Section: "1", Source: "lockledger", Manual: "lockledger manual"}
	var b bytes.Buffer
	restore := cli.HideUnusedFlags(c)
	_ = doc.GenMan(c, hdr, &b) // writes to memory; fails only on a bad SOURCE_DATE_EPOCH, which then shows
	restore()
	more := exitStatus() + environment(c)
	out := b.String()
	if i := strings.Index(out, "\n.SH SEE ALSO"); i >= 0 {
		return []byte(out[:i+1] + more + out[i+1:])
	}
	return []byte(out + more)
}

func exitStatus() string {
	var b strings.Builder
	b.WriteString(".SH EXIT STATUS\n")
	for _, e := range cli.ExitStatuses {
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", roff(e.Code), roff(strings.ReplaceAll(e.Meaning, "`", "")))
	}
	b.WriteString("\n")
	return b.String()
}

func environment(c *cobra.Command) string {
	var b strings.Builder
	b.WriteString(".SH ENVIRONMENT\n")
	vars := cli.EnvironmentOf(c)
	if c.HasParent() {
		fmt.Fprintf(&b, "The variables %s reads; \\fBlockledger(1)\\fP and \\fBlockledger help environment\\fP list every one.\n",
			roff(c.CommandPath()))
	}
	for _, v := range vars {
		meaning := v.Meaning
		if v.Set {
			meaning = "(set, not read) " + meaning
		}
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fP\n%s\n", roff(v.Name), roff(meaning))
	}
	b.WriteString("\n")
	return b.String()
}

// roff makes text safe as roff input: backslashes escaped, and no line
// starting with a control character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
