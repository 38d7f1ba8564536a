package cli

import (
	"bytes"
	"slices"
	"testing"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/cli/invocation"
)

// listed is what the root's help listing, dispatch and suggestions read of
// a command below it.
type listed struct {
	Use, Short, GroupID, Deprecated string
	Aliases, SuggestFor             []string
	Hidden, Available, HelpTopic    bool
}

func listedOf(c *cobra.Command) listed {
	return listed{
		Use: c.Use, Short: c.Short, GroupID: c.GroupID, Deprecated: c.Deprecated,
		Aliases: c.Aliases, SuggestFor: c.SuggestFor,
		Hidden: c.Hidden, Available: c.IsAvailableCommand(), HelpTopic: c.IsAdditionalHelpTopicCommand(),
	}
}

// TestStubsListLikeTheirCommands: every command below the root, as a
// process that does not run it has it (its stub), shows in the root's help,
// dispatch and suggestions exactly as the command built in full, and the
// root's help reads the same from either tree.
func TestStubsListLikeTheirCommands(t *testing.T) {
	full := newRoot(&invocation.Globals{})
	lazy := newRootFor(&invocation.Globals{}, nil)
	var names []string
	for _, c := range full.Commands() {
		names = append(names, c.Name())
		s, _, err := lazy.Find([]string{c.Name()})
		if err != nil || s.Name() != c.Name() {
			t.Errorf("%s: not in the tree of a process that does not run it", c.Name())
			continue
		}
		if got, want := listedOf(s), listedOf(c); !equalListed(got, want) {
			t.Errorf("%s: listed as\n%+v\nbuilt in full it is\n%+v\n(its constructor must take these from its Listing)", c.Name(), got, want)
		}
	}
	for _, s := range lazy.Commands() {
		if !slices.Contains(names, s.Name()) {
			t.Errorf("%s: listed, but not a command of the full tree", s.Name())
		}
	}
	if got, want := helpOf(t, lazy), helpOf(t, full); got != want {
		t.Errorf("root help from the stubs:\n%s\nfrom the full tree:\n%s", got, want)
	}
}

// TestInvokedCommandIsBuiltInFull: the command args name is the full one,
// flags and subcommands, under its name and each alias; args that name no
// command get the whole tree, for the suggestions.
func TestInvokedCommandIsBuiltInFull(t *testing.T) {
	full := newRoot(&invocation.Globals{})
	for _, c := range full.Commands() {
		for _, name := range append([]string{c.Name()}, c.Aliases...) {
			for _, args := range [][]string{{name}, {"--json", name, "x"}, {"-q", "--root", "r", name, "--help"}} {
				want, _, _ := newRoot(&invocation.Globals{}).Find(args)
				got, _, err := newRootFor(&invocation.Globals{}, args).Find(args)
				if err != nil {
					t.Errorf("%q: %v", args, err)
					continue
				}
				if got.Name() != c.Name() || got.Flags().FlagUsages() != want.Flags().FlagUsages() || len(got.Commands()) != len(want.Commands()) || got.Long != want.Long {
					t.Errorf("%q: %s is not built in full", args, got.Name())
				}
			}
		}
	}
	lazy := newRootFor(&invocation.Globals{}, []string{"stauts"})
	for _, c := range full.Commands() {
		s, _, err := lazy.Find([]string{c.Name()})
		if err != nil || s.Flags().FlagUsages() != c.Flags().FlagUsages() || len(s.Commands()) != len(c.Commands()) {
			t.Errorf("after a typo, %s is not built in full", c.Name())
		}
	}
}

func equalListed(a, b listed) bool {
	return a.Use == b.Use && a.Short == b.Short && a.GroupID == b.GroupID && a.Deprecated == b.Deprecated &&
		slices.Equal(a.Aliases, b.Aliases) && slices.Equal(a.SuggestFor, b.SuggestFor) &&
		a.Hidden == b.Hidden && a.Available == b.Available && a.HelpTopic == b.HelpTopic
}

func helpOf(t *testing.T, root *cobra.Command) string {
	t.Helper()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatalf("--help: %v", err)
	}
	return out.String()
}

// BenchmarkRoot: the whole tree against what --help and status build.
func BenchmarkRoot(b *testing.B) {
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			newRoot(&invocation.Globals{})
		}
	})
	for _, args := range [][]string{{"--help"}, {"status", "x"}, {"run", "x", "--", "true"}} {
		b.Run(args[0], func(b *testing.B) {
			for b.Loop() {
				newRootFor(&invocation.Globals{}, args)
			}
		})
	}
}
