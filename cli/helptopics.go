package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockledger/lockledger/events"
)

// helpTopic is a page of `lockledger help TOPIC` that is not a command.
type helpTopic struct {
	name  string
	short string
	write func(io.Writer)
}

var helpTopics = []helpTopic{
	{"environment", "the environment variables lockledger reads and sets", writeEnvironment},
	{"exit-codes", "what each exit code means", writeExitCodes},
	{"json", "what --json writes, and the kinds of error it names", writeJSONTopic},
}

// HelpTopics are the names `lockledger help` takes besides commands.
func HelpTopics() []string {
	out := make([]string, len(helpTopics))
	for i, t := range helpTopics {
		out[i] = t.name
	}
	return out
}

// newHelp is `lockledger help [COMMAND... | TOPIC]`: cobra's help, plus the
// topics, and an unknown name is bad input (exit 2), not a page.
func newHelp(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command | topic]",
		Short: "Help about any command, or a topic (" + strings.Join(HelpTopics(), ", ") + ")",
		Long: "help COMMAND prints the help of a command (as COMMAND --help does); help TOPIC prints a topic:\n\n" +
			strings.Join(topicLines(), "\n"),
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var out []string
			if len(args) == 0 {
				for _, t := range helpTopics {
					if strings.HasPrefix(t.name, toComplete) {
						out = append(out, t.name+"\t"+t.short)
					}
				}
				if strings.HasPrefix(topicsTopic, toComplete) {
					out = append(out, topicsTopic+"\t"+"list the help topics")
				}
			}
			parent, _, err := root.Find(args)
			if err != nil {
				return out, cobra.ShellCompDirectiveNoFileComp
			}
			for _, c := range parent.Commands() {
				if c.IsAvailableCommand() && c.Name() != "help" && strings.HasPrefix(c.Name(), toComplete) {
					out = append(out, c.Name()+"\t"+c.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == topicsTopic {
				fmt.Fprintf(cmd.OutOrStdout(), "Help topics (lockledger help TOPIC):\n\n%s\n", strings.Join(topicLines(), "\n"))
				return nil
			}
			if len(args) == 1 {
				if i := slices.IndexFunc(helpTopics, func(t helpTopic) bool { return t.name == args[0] }); i >= 0 {
					helpTopics[i].write(cmd.OutOrStdout())
					return nil
				}
			}
			target, rest, err := root.Find(args)
			if err != nil || target == nil || len(rest) > 0 || (len(args) > 0 && target == root) {
				return events.Invalid("help topic", strings.Join(args, " "), "must be a command or one of the topics "+
					strings.Join(HelpTopics(), ", ")+" (lockledger --help lists the commands: "+strings.Join(commandNames(root), ", ")+")")
			}
			target.InitDefaultHelpFlag()
			target.InitDefaultVersionFlag()
			return target.Help()
		},
	}
}

// topicsTopic is `lockledger help topics`: the list of the topics, which
// the root's help names, so asking for it by that name must work.
const topicsTopic = "topics"

func topicLines() []string {
	var lines []string
	for _, t := range helpTopics {
		lines = append(lines, fmt.Sprintf("  %-12s %s", t.name, t.short))
	}
	return lines
}

func commandNames(root *cobra.Command) []string {
	var out []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, c.Name())
		}
	}
	return out
}

// registerHelpTopics installs the help command and names the topics at
// the end of the top-level help.
func registerHelpTopics(root *cobra.Command) {
	help := newHelp(root)
	root.SetHelpCommand(help)
	root.AddCommand(help) // now, so that Main sees it ran
	root.Long += "\n\nHelp topics: lockledger help " + strings.Join(HelpTopics(), ", lockledger help ") + "."
}
