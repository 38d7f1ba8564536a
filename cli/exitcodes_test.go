package cli_test

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli"
)

// exitCodeTables are the rows of every "| code | meaning |" table in
// README.md and docs/, by file.
func exitCodeTables(t *testing.T) map[string][][2]string {
	t.Helper()
	files, _ := filepath.Glob("../docs/*.md")
	files = append([]string{"../README.md"}, files...)
	out := map[string][][2]string{}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.TrimSpace(l) != "| code | meaning |" {
				continue
			}
			var rows [][2]string
			for _, row := range lines[i+2:] {
				cells := strings.Split(strings.TrimSpace(row), "|")
				if len(cells) != 4 || cells[0] != "" || cells[3] != "" {
					break
				}
				rows = append(rows, [2]string{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
			}
			out[name] = rows
		}
	}
	return out
}

// TestReadmeExitCodesAgree: the exit-code table users read is cli.ExitStatuses,
// row for row.
func TestReadmeExitCodesAgree(t *testing.T) {
	tables := exitCodeTables(t)
	if len(tables) == 0 {
		t.Fatal(`no "| code | meaning |" table in README.md or docs/`)
	}
	var want strings.Builder
	for _, e := range cli.ExitStatuses {
		want.WriteString("| " + e.Code + " | " + e.Meaning + " |\n")
	}
	for file, rows := range tables {
		var got strings.Builder
		for _, r := range rows {
			got.WriteString("| " + r[0] + " | " + r[1] + " |\n")
		}
		if got.String() != want.String() {
			t.Errorf("%s's exit codes differ from cli.ExitStatuses; its rows should read:\n%s\nthey read:\n%s", file, want.String(), got.String())
		}
	}
}

// TestExitCodeConstantsAreDocumented: every Exit* constant of packages cli
// and cli/invocation has its line in cli.ExitStatuses.
func TestExitCodeConstantsAreDocumented(t *testing.T) {
	documented := map[int]bool{}
	for _, e := range cli.ExitStatuses {
		for _, f := range strings.FieldsFunc(e.Code, func(r rune) bool { return r == ' ' || r == '/' || r == '+' }) {
			if n, err := strconv.Atoi(f); err == nil {
				documented[n] = true
			}
		}
	}
	n := 0
	for _, p := range binaryPackages(t) {
		if p.path != module+"/cli" && p.path != module+"/cli/invocation" {
			continue
		}
		for _, f := range p.files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasPrefix(name.Name, "Exit") || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.INT {
							t.Errorf("%s is not a plain number", name.Name)
							continue
						}
						code, _ := strconv.Atoi(lit.Value)
						n++
						if !documented[code] {
							t.Errorf("%s (%d) is not in cli.ExitStatuses", name.Name, code)
						}
					}
				}
			}
		}
	}
	if n < 7 {
		t.Fatalf("found only %d Exit* constants in packages cli and cli/invocation", n)
	}
}
