package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sqlAllowed are the product directories whose Go files may hold SQL, and
// why; built marks those that also build a statement from a value, and how
// it stays safe. Tools, test kits and tests (internal/, e2e/) are not
// checked.
var sqlAllowed = map[string]struct{ why, built string }{
	"store":      {why: "the one package that runs SQL on the ledger's database"},
	"migrations": {why: "the schema, which store applies"},
	"fence": {why: "the trigger users install in their own database (fence.PostgresSQL), not the ledger's",
		built: "AttachSQL quotes the table's name (pgx.Identifier.Sanitize) and the resource ('' for ')"},
	"replay": {why: "reads the rows itself until it folds over an iterator the store provides",
		built: "a filter's values are bound as $N arguments; only column names go into the text"},
}

var sqlText = regexp.MustCompile(`^\s*((SELECT|INSERT|UPDATE|DELETE|WITH|PRAGMA|BEGIN|CREATE|DROP|ALTER|REPLACE)\s|VACUUM\b\s*(FULL\b|$))`)

// TestSQLLivesInStore: no Go file outside the directories above holds a
// string of SQL; and where SQL is, it is joined (with + or fmt) only to
// string literals and the package's constants, never to a value that
// could come from input.
func TestSQLLivesInStore(t *testing.T) {
	root := ".."
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		if rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "internal" || rel == "e2e" {
			return filepath.SkipDir
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		fset, srcs := token.NewFileSet(), []*ast.File{}
		for _, e := range ents {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
				if err != nil {
					return err
				}
				srcs = append(srcs, f)
			}
		}
		allowed, built := false, false
		for a, why := range sqlAllowed {
			if rel == a || strings.HasPrefix(rel, a+"/") {
				allowed, built = true, why.built != ""
			}
		}
		for _, p := range sqlProblems(fset, srcs, allowed, built) {
			t.Error(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSQLCheckFindsSQLOutOfPlaceAndBuiltFromValues: the check can fail.
func TestSQLCheckFindsSQLOutOfPlaceAndBuiltFromValues(t *testing.T) {
	src := `package bad
const cols = "a, b"
func f(db DB, name string) {
	db.Query("SELECT " + cols + " FROM t WHERE name = $1", name)
	db.Query("SELECT * FROM t WHERE name = '" + name + "'")
	db.Exec(fmt.Sprintf("DELETE FROM %s", name))
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "bad.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := sqlProblems(fset, []*ast.File{f}, true, false)
	if len(got) != 2 || !strings.Contains(got[0], "bad.go:5") || !strings.Contains(got[1], "bad.go:6") {
		t.Errorf("in store: got %q, want lines 5 and 6 built from a value", got)
	}
	if got := sqlProblems(fset, []*ast.File{f}, false, false); len(got) != 5 {
		t.Errorf("outside store: got %q, want 3 SQL strings and 2 of them built from a value", got)
	}
}

// sqlProblems lists the SQL strings of a package's files where SQL may not
// be (allowed false), and, unless built, SQL joined to anything but string
// literals and the package's constants.
func sqlProblems(fset *token.FileSet, files []*ast.File, allowed, built bool) (out []string) {
	consts := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						consts[n.Name] = true
					}
				}
			}
		}
	}
	isSQL := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, _ := strconv.Unquote(lit.Value)
		return sqlText.MatchString(s)
	}
	seen := map[token.Pos]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var parts []ast.Expr
			switch n := n.(type) {
			case *ast.BasicLit:
				if !allowed && isSQL(n) {
					out = append(out, fset.Position(n.Pos()).String()+": SQL outside store: "+n.Value[:min(len(n.Value), 50)])
				}
			case *ast.BinaryExpr:
				parts = operands(n)
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "fmt" {
						parts = n.Args
					}
				}
			}
			if !built && slices.ContainsFunc(parts, isSQL) {
				for _, p := range parts {
					_, lit := p.(*ast.BasicLit)
					id, ok := p.(*ast.Ident)
					if !lit && !(ok && consts[id.Name]) && !seen[p.Pos()] {
						seen[p.Pos()] = true
						out = append(out, fset.Position(p.Pos()).String()+": SQL built from a value")
					}
				}
			}
			return true
		})
	}
	return out
}

// operands are the strings a chain of + joins.
func operands(e ast.Expr) []ast.Expr {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return operands(e.X)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return append(operands(e.X), operands(e.Y)...)
		}
	}
	return []ast.Expr{e}
}
