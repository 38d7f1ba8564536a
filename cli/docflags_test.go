package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockledger/lockledger/cli"
)

// TestDocsNameOnlyFlagsThatExist: a code span of README.md or docs/*.md
// that begins with a long flag (`--database`, `--wait 30s`) names a flag
// some lockledger command has, so a page cannot send a reader to a flag
// there is none of.
func TestDocsNameOnlyFlagsThatExist(t *testing.T) {
	known := map[string]bool{"help": true} // cobra adds --help when it runs
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) { known[f.Name] = true }
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cli.Command())
	pages, _ := filepath.Glob("../docs/*.md")
	span := regexp.MustCompile("`--([a-z][a-z0-9-]*)[ =`]")
	for _, page := range append(pages, "../README.md") {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range span.FindAllStringSubmatch(string(text), -1) {
			if !known[m[1]] {
				t.Errorf("%s names --%s, a flag no lockledger command has", filepath.Base(page), m[1])
			}
		}
	}
}
