package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockledger/lockledger/cli/invocation"
)

// runArgs is args with "--" put before the command of "lockledger run NAME
// CMD...", where the caller left it out, so that CMD's own flags stay
// CMD's: after NAME, the first argument that is not one of run's flags or
// a flag's value starts CMD. A CMD that starts with "-" still needs "--"
// (it reads as a flag of run), as does anything run's flags cannot parse
// (cobra then says what is wrong).
func runArgs(root *cobra.Command, args []string) []string {
	at := positional(flagsOf(root), args, 0)
	if at < 0 {
		return args
	}
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Name() != "run" || cmd.Parent() != root {
		return args
	}
	rest := args[at+1:]
	i := positional(flagsOf(cmd), rest, 1)
	if i < 0 {
		return args
	}
	out := append([]string{}, args[:at+1]...)
	out = append(out, rest[:i]...)
	out = append(out, "--")
	return append(out, rest[i:]...)
}

// unknownCommand is the error for args naming no command: cobra's words
// with its "Did you mean" hint on the same line; nil when args name one.
func unknownCommand(root *cobra.Command, args []string) error {
	if _, _, err := root.Find(args); err == nil {
		return nil
	}
	at := positional(flagsOf(root), args, 0)
	if at < 0 {
		return nil
	}
	name := args[at]
	msg := fmt.Sprintf("unknown command %q for %q", name, root.Name())
	if root.SuggestionsMinimumDistance <= 0 {
		root.SuggestionsMinimumDistance = 2
	}
	var s []string
	for _, c := range root.SuggestionsFor(name) {
		if q := fmt.Sprintf("%q", c); !slices.Contains(s, q) {
			s = append(s, q)
		}
	}
	if len(s) > 0 {
		msg += "; did you mean " + orList(s) + "?"
	}
	return &invocation.UsageError{Err: fmt.Errorf("%s", msg)}
}

// flagsOf is every flag cmd parses: its own, its parents' persistent ones
// and help (and version on the root).
func flagsOf(cmd *cobra.Command) *pflag.FlagSet {
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(cmd.PersistentFlags())
	fs.AddFlagSet(cmd.InheritedFlags())
	return fs
}

// positional is the index in args of argument n (from 0) that is neither
// a flag nor a flag's value, as pflag parses args with the flags of fs; -1
// when there is none, or when "--" or a flag fs does not know comes first.
func positional(fs *pflag.FlagSet, args []string, n int) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return -1
		case strings.HasPrefix(a, "--"):
			name, _, inline := strings.Cut(a[2:], "=")
			f := fs.Lookup(name)
			if f == nil {
				return -1
			}
			if !inline && f.NoOptDefVal == "" {
				i++
			}
		case len(a) > 1 && a[0] == '-':
		shorthands:
			for j := 1; j < len(a); j++ {
				f := fs.ShorthandLookup(a[j : j+1])
				if f == nil {
					return -1
				}
				if f.NoOptDefVal == "" {
					if j == len(a)-1 {
						i++
					}
					break shorthands
				}
			}
		case n == 0:
			return i
		default:
			n--
		}
	}
	return -1
}

// unknownFlag is err, a flag the command does not have, with the flags of
// that command nearest the name given ("did you mean --holder?"); nil
// when err is not an unknown flag or none is near.
func unknownFlag(root *cobra.Command, args []string, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return nil
	}
	typed := ne.GetSpecifiedName()
	cmd, _, ferr := root.Find(args)
	if ferr != nil {
		return nil
	}
	if hint := foreignHint(flagsOf(cmd), ne); hint != "" {
		return fmt.Errorf("%w; %s", err, hint)
	}
	if len(typed) < 2 {
		return nil // a shorthand: -x has too few letters to be near anything
	}
	var near []string
	flagsOf(cmd).VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(typed, f.Name); d <= max(1, len(typed)/4) || strings.HasPrefix(f.Name, typed) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) == 0 || len(near) > 4 {
		return nil
	}
	return fmt.Errorf("%w; did you mean %s?", err, orList(near))
}

// foreignFlags are the flags of flock(1), consul lock, etcdctl lock and
// Terraform that users of those tools type and that lockledger spells
// otherwise or has no use for, each with what to type instead. A hint is
// given only where the command has the flag it names (needs), so that it
// never points at something the command lacks.
var foreignFlags = []struct {
	names []string // as typed, without dashes: shorthands and long names
	needs string
	hint  string
}{
	{[]string{"timeout", "lock-timeout"}, "wait",
		"did you mean --wait (-w)? flock's --timeout, consul lock's -timeout and Terraform's -lock-timeout are --wait here: seconds (5, 0.5), a duration (90s, 15m) or forever"},
	{[]string{"x", "e", "exclusive"}, "shared",
		"a lock is exclusive unless --shared (-s) or --limit is given: leave flock's -x out"},
	{[]string{"o", "close"}, "leave-running",
		"flock's -o has no counterpart: what the command leaves running is stopped when it exits, and --leave-running leaves it running without the lock"},
	{[]string{"u", "unlock"}, "shared",
		"to free a lock, use lockledger release NAME --request-id ID"},
}

// foreignHint is what to type instead of the unknown flag of ne, when it
// is one of foreignFlags and fs has the flag its hint names; "" if not.
// A single-dash word (-timeout, consul's and Terraform's way) is looked up
// whole, then by its first letter as pflag read it.
func foreignHint(fs *pflag.FlagSet, ne *pflag.NotExistError) string {
	typed := []string{ne.GetSpecifiedName()}
	if group := ne.GetSpecifiedShortnames(); group != "" {
		word, _, _ := strings.Cut(group, "=")
		typed = []string{word, ne.GetSpecifiedName()}
	}
	for _, name := range typed {
		for _, f := range foreignFlags {
			if slices.Contains(f.names, name) && fs.Lookup(f.needs) != nil {
				return f.hint
			}
		}
	}
	return ""
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
