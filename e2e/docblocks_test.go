package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// docBlock is one fenced block of a Markdown page.
type docBlock struct {
	file string
	line int      // of the opening fence, 1-based
	lang string   // first word of the info string
	tags []string // the other words: norun, pg
	body []string
}

func (b docBlock) has(tag string) bool {
	for _, t := range b.tags {
		if strings.TrimSuffix(t, ":") == tag {
			return true
		}
	}
	return false
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// isCommands: a block of shell commands, by its language or because a line
// of it is a "$ " prompt.
func (b docBlock) isCommands() bool {
	if b.lang == "sh" || b.lang == "console" || b.lang == "bash" || b.lang == "shell" {
		return true
	}
	for _, l := range b.body {
		if strings.HasPrefix(l, "$ ") {
			return true
		}
	}
	return false
}

// docBlocks reads the fenced blocks of a Markdown file.
func docBlocks(path string) ([]docBlock, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []docBlock
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			continue
		}
		info := strings.Fields(strings.TrimPrefix(l, "```"))
		b := docBlock{file: filepath.Base(path), line: i + 1}
		if len(info) > 0 {
			b.lang, b.tags = info[0], info[1:]
		}
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			b.body = append(b.body, lines[i])
		}
		out = append(out, b)
	}
	return out, nil
}

// docCommand is one command of a block and what the block shows of it.
type docCommand struct {
	text   string   // as bash reads it: continuation and here-document lines included
	exit   int      // "# exit N" on its first line, else 0
	output []string // the lines shown after it
}

var (
	exitComment = regexp.MustCompile(`#\s*exit (\d+)`)
	hereDoc     = regexp.MustCompile(`<<-?\s*'?"?(\w+)'?"?`)
)

// commands splits a block into its commands. With "$ " prompts, those lines
// are the commands and every other line but a "#" comment is the output of
// the command before it; without, every line but a comment is a command.
func (b docBlock) commands() []docCommand {
	prompted := false
	for _, l := range b.body {
		if strings.HasPrefix(l, "$ ") {
			prompted = true
			break
		}
	}
	var cmds []docCommand
	for i := 0; i < len(b.body); i++ {
		l := b.body[i]
		first, isCmd := l, !prompted
		if prompted {
			first, isCmd = strings.TrimPrefix(l, "$ "), strings.HasPrefix(l, "$ ")
		}
		trimmed := strings.TrimSpace(l)
		if !isCmd {
			if trimmed == "" || strings.HasPrefix(trimmed, "#") || len(cmds) == 0 {
				continue
			}
			cmds[len(cmds)-1].output = append(cmds[len(cmds)-1].output, l)
			continue
		}
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		c := docCommand{text: first}
		if m := exitComment.FindStringSubmatch(first); m != nil {
			c.exit, _ = strconv.Atoi(m[1])
		}
		for cur := first; strings.HasSuffix(strings.TrimSpace(stripComment(cur)), "\\") && i+1 < len(b.body); {
			i++
			cur = b.body[i]
			c.text += "\n" + cur
		}
		if m := hereDoc.FindStringSubmatch(c.text); m != nil {
			for i++; i < len(b.body); i++ {
				c.text += "\n" + b.body[i]
				if strings.TrimSpace(b.body[i]) == m[1] {
					break
				}
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// stripComment drops a trailing " # ..." comment (outside quotes, roughly:
// the docs put none inside quotes).
func stripComment(l string) string {
	if i := strings.Index(l, " #"); i >= 0 {
		return l[:i]
	}
	return l
}

// matchShown reports whether the lines a page shows appear, in order, among
// the lines a command printed. Runs of spaces count as one, "..." in a shown
// line stands for any text, and a shown line that is only "..." for any
// number of lines (so, as any other line may come in between, it only reads
// as "and more"). The tokens of variable match any token of their kind.
func matchShown(shown []string, printed string) (bool, string) {
	got := strings.Split(printed, "\n")
	j := 0
	for _, s := range shown {
		s = squeeze(s)
		if s == "..." {
			continue
		}
		raw, norm := shownPattern(s), shownPattern(normalize(strings.ReplaceAll(s, "req_...", "<req>")))
		for ; j < len(got); j++ {
			if g := squeeze(got[j]); raw.MatchString(g) || norm.MatchString(normalize(g)) {
				break
			}
		}
		if j == len(got) {
			return false, s
		}
		j++
	}
	return true, ""
}

var spaces = regexp.MustCompile(`\s+`)

// variable are the tokens that differ from run to run, each with the
// placeholder it reads as on both sides: a page may show a real run's.
var variable = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`), "<clock>"},
	{regexp.MustCompile(`req_[0-9A-Z]{26}\b`), "<req>"},
	{regexp.MustCompile(`req_…[0-9A-Z]{6}\b`), "<req>"},
	{regexp.MustCompile(`\b[0-9a-f]{32,64}\b`), "<hex>"},
	{regexp.MustCompile(`\bpid \d+`), "pid <n>"},
	{regexp.MustCompile(`\b\d+@`), "<n>@"},
	{regexp.MustCompile(`\b\d+\([a-z_][a-z0-9_-]*\)`), "<uid>"},
	{regexp.MustCompile(`\+[0-9a-f]{8}\+[A-Za-z0-9+/]{40,}=*`), "+<key>"},
	{regexp.MustCompile(`(@[^\s/()@]+)/[0-9a-f]{16}\b`), "$1/<machine>"}, // a key name's machine part (trust.KeyName)
}

func normalize(s string) string {
	for _, v := range variable {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

func squeeze(s string) string { return strings.TrimSpace(spaces.ReplaceAllString(s, " ")) }

func shownPattern(s string) *regexp.Regexp {
	parts := strings.Split(s, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}
