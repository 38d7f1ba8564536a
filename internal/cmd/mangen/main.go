// Command mangen writes lockledger's man pages, one per command, generated
// from the command tree (its Short, Long, Example and flags), so that they
// cannot drift from --help. make man runs it; the pages are not committed.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

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
	hdr := &doc.GenManHeader{Title: "LOCKLEDGER", Section: "1", Source: "lockledger", Manual: "lockledger manual"}
	return doc.GenManTree(root, hdr, dir)
}
