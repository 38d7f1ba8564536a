package cli_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli"
)

// TestDocsErrorKindsAgree: the table in docs/json.md is cli.ErrorKinds,
// row for row.
func TestDocsErrorKindsAgree(t *testing.T) {
	b, err := os.ReadFile("../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, k := range cli.ErrorKinds {
		want.WriteString("| " + k.Kind + " | " + k.Exit + " | " + k.Meaning + " |\n")
	}
	_, table, ok := strings.Cut(string(b), "| kind | exit | meaning |\n|---|---|---|\n")
	if !ok {
		t.Fatal(`docs/json.md has no "| kind | exit | meaning |" table`)
	}
	var got strings.Builder
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		got.WriteString(l + "\n")
	}
	if got.String() != want.String() {
		t.Errorf("docs/json.md's error kinds:\n%s\nwant (cli.ErrorKinds):\n%s", got.String(), want.String())
	}
}

// TestErrorKindsComeFromTheTable: no JSON object in cli names its "error"
// with a string of its own; every kind is a constant of the table.
func TestErrorKindsComeFromTheTable(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	inTable := map[string]bool{}
	for _, k := range cli.ErrorKinds {
		inTable[k.Kind] = true
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.BasicLit); ok && k.Value == `"error"` {
					if v, ok := n.Value.(*ast.BasicLit); ok {
						t.Errorf("%s: \"error\": %s is not a constant of cli.ErrorKinds", fset.Position(n.Pos()), v.Value)
					}
				}
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if strings.HasPrefix(id.Name, "Kind") && i < len(n.Values) {
						if v, ok := n.Values[i].(*ast.BasicLit); ok {
							s, _ := strconv.Unquote(v.Value)
							if !inTable[s] {
								t.Errorf("%s = %s is not in cli.ErrorKinds", id.Name, v.Value)
							}
						}
					}
				}
			}
			return true
		})
	}
}
