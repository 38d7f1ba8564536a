package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestSecurityNoSQLBuiltFromInput scans the Go sources of ledger/, store/,
// replay/ and storagecheck/ with go/parser and go/types: the query argument of every
// Exec/Query/QueryRow/Prepare(Context) call must be a constant expression,
// or a string built only from constants (concatenation, strings.Join of
// constant fragments, $N placeholders numbered with strconv.Itoa, through local variables and
// same-package helpers), never from a value that came in from outside.
func TestSecurityNoSQLBuiltFromInput(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"ledger", "replay", "storagecheck", "store"} {
		t.Run(pkg, func(t *testing.T) {
			c := newSQLChecker(t, filepath.Join("..", pkg), modulePath+"/"+pkg)
			if len(c.calls) == 0 {
				t.Fatalf("no query calls found in %s: is the scanner broken?", pkg)
			}
			for _, f := range c.findings() {
				t.Errorf("%s", f)
			}
			t.Logf("%d query calls checked in %s: %d constant, %d built from constants only, %d forwarded by a query method", len(c.calls), pkg,
				c.constant, c.derived, c.forwards)
		})
	}
}

// TestSecuritySQLCheckerCatchesInjection runs the checker on a small
// package that builds SQL every wrong way (and forwards it through a
// method that is not itself a query method), so that the scan above is known
// to be able to fail.
func TestSecuritySQLCheckerCatchesInjection(t *testing.T) {
	t.Parallel()
	src := `package bad

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

const cols = "a, b"

func good(ctx context.Context, db *sql.DB, name string, n int) {
	db.QueryContext(ctx, "SELECT "+cols+" FROM t WHERE name = ?", name) // ok
	q := "SELECT " + cols
	q += " FROM t"
	db.Query(q) // ok
	marks := make([]string, n)
	for i := range marks {
		marks[i] = "$" + strconv.Itoa(i+1)
	}
	db.Exec("DELETE FROM t WHERE id IN (" + strings.Join(marks, ",") + ")") // ok
	db.QueryRow(build2()) // ok
	db.QueryRow(wrap("x")) // ok
}

func bad(ctx context.Context, db *sql.DB, name string, tx *sql.Tx) {
	db.QueryContext(ctx, "SELECT * FROM t WHERE name = '"+name+"'") // BAD 1
	tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s", name)) // BAD 2
	q := "SELECT "
	q += name
	db.Query(q) // BAD 3
	db.QueryRow(build(name)) // BAD 4
	db.PrepareContext(ctx, wrap(name)) // BAD 5
	parts := []string{"a", name}
	db.Exec(strings.Join(parts, ",")) // BAD 6
	var s string
	fmt.Sscan(name, &s)
	db.Exec(s) // BAD 7
	db.Exec(string([]byte(name))) // BAD 8
}

type fwd struct{ db *sql.DB }

func (f fwd) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return f.db.ExecContext(ctx, query, args...) // ok: every call of fwd.ExecContext is checked
}

func (f fwd) run(ctx context.Context, query string) {
	f.db.ExecContext(ctx, query) // BAD 9
}

func useFwd(ctx context.Context, f fwd, name string) {
	f.ExecContext(ctx, "DELETE FROM t WHERE id = ?", name) // ok
	f.ExecContext(ctx, "DELETE FROM t WHERE name = '"+name+"'") // BAD 10
}

type rewriting struct{ db *sql.DB }

func (r rewriting) ExecContext(ctx context.Context, query string) {
	r.db.ExecContext(ctx, pgSQL(query)) // ok: a dialect rewrite of the forwarded query
}

func (r rewriting) QueryContext(ctx context.Context, query string) {
	r.db.QueryContext(ctx, wrap(query)) // BAD 11
}

type ctxFirst interface {
	Exec(ctx context.Context, sql string, args ...any) (any, error)
}

func listen(ctx context.Context, c ctxFirst, name string, db *sql.DB) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.Exec(wctx, "LISTEN x") // ok
	c.Exec(ctx, "SELECT '"+name+"'") // BAD 12
	q := "SELECT '" + name + "'"
	db.Exec(q, "value") // BAD 13
}

func pgSQL(q string) string { return q }
func build(n string) string { return "SELECT " + n }
func build2() string { q := "SELECT 1"; return q }
func wrap(s string) string { return "SELECT '" + s + "'" }
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newSQLChecker(t, dir, "example.com/bad")
	var got []int
	for _, f := range c.flagged {
		got = append(got, f.line)
	}
	var want []int
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "// BAD") {
			want = append(want, i+1)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		for _, f := range c.findings() {
			t.Log(f)
		}
		t.Fatalf("flagged lines %v, want %v", got, want)
	}
	if len(c.calls) != 22 {
		t.Fatalf("saw %d query calls, want 22", len(c.calls))
	}
}

const modulePath = "github.com/lockledger/lockledger"

// sqlMethods maps a query method to the index of its query argument.
var sqlMethods = map[string]int{"Exec": 0, "Query": 0, "QueryRow": 0, "Prepare": 0,
	"ExecContext": 1, "QueryContext": 1, "QueryRowContext": 1, "PrepareContext": 1}

type sqlFinding struct {
	pos  token.Position
	line int
	fn   string
	expr string
}

type sqlChecker struct {
	t        *testing.T
	fset     *token.FileSet
	files    []*ast.File
	info     *types.Info
	pkg      *types.Package
	funcs    map[*types.Func]*ast.FuncDecl
	calls    []*ast.CallExpr
	flagged  []sqlFinding
	constant int
	derived  int
	forwards int
	visiting map[any]bool
}

// newSQLChecker parses and type-checks the non-test Go files of dir as
// package path, then checks every query call. Packages of this module are
// type-checked from source; every other import is an empty stand-in (the
// check needs only this package's constants and identifiers).
func newSQLChecker(t *testing.T, dir, path string) *sqlChecker {
	t.Helper()
	fset := token.NewFileSet()
	imp := &srcImporter{fset: fset, done: map[string]*types.Package{}}
	files, err := parseDir(fset, dir)
	if err != nil {
		t.Fatal(err)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
		Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp, Error: func(error) {}}
	pkg, _ := conf.Check(path, fset, files, info)
	c := &sqlChecker{t: t, fset: fset, files: files, info: info, pkg: pkg, funcs: map[*types.Func]*ast.FuncDecl{},
		visiting: map[any]bool{}}
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
					c.funcs[fn] = fd
				}
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			i, ok := sqlMethods[sel.Sel.Name]
			if !ok || len(call.Args) <= i {
				return true
			}
			if i == 0 && len(call.Args) > 1 && c.isContext(call.Args[0]) {
				i = 1 // pgx's Exec, Query and QueryRow take the context first
			}
			if tv, ok := info.Types[call.Args[i]]; ok && tv.Type != nil {
				b, basic := tv.Type.Underlying().(*types.Basic)
				if !basic || b.Kind() != types.Invalid && b.Info()&types.IsString == 0 {
					return true // not a query string (another method of that name)
				}
			}
			c.calls = append(c.calls, call)
			arg := call.Args[i]
			switch {
			case c.isConst(arg):
				c.constant++
			case c.clean(arg, nil):
				c.derived++
			case c.forwarded(arg, i):
				c.forwards++
			default:
				pos := fset.Position(arg.Pos())
				c.flagged = append(c.flagged, sqlFinding{pos: pos, line: pos.Line, fn: c.enclosing(arg.Pos()), expr: c.text(arg)})
			}
			return true
		})
	}
	sort.Slice(c.flagged, func(i, j int) bool { return c.flagged[i].pos.Offset < c.flagged[j].pos.Offset })
	return c
}

func (c *sqlChecker) findings() []string {
	var out []string
	for _, f := range c.flagged {
		out = append(out, fmt.Sprintf("%s (in %s): query text %s is not built from constants only", f.pos, f.fn, f.expr))
	}
	return out
}

// sqlRewriters rewrite a query's dialect (placeholders, hints) and nothing
// else: a query forwarded through one is still forwarded.
var sqlRewriters = map[string]bool{"pgSQL": true}

// forwarded reports a query argument that is the query parameter of the
// enclosing method, itself a query method (a statement cache wrapping a
// transaction, say), as it is or through a rewriter: every call of that
// method is a query call checked here.
func (c *sqlChecker) forwarded(e ast.Expr, idx int) bool {
	if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
		if fn, ok := call.Fun.(*ast.Ident); ok && sqlRewriters[fn.Name] {
			if _, local := c.info.Uses[fn].(*types.Func); local {
				return c.forwarded(call.Args[0], idx)
			}
		}
		return false
	}
	id, ok := e.(*ast.Ident)
	if !ok {
		return false
	}
	fd := c.funcAt(e.Pos())
	if fd == nil || fd.Recv == nil {
		return false
	}
	if i, ok := sqlMethods[fd.Name.Name]; !ok || i != idx {
		return false
	}
	n := 0
	for _, field := range fd.Type.Params.List {
		for _, name := range field.Names {
			if n == idx {
				return c.info.Uses[id] != nil && c.info.Uses[id] == c.info.Defs[name]
			}
			n++
		}
		if len(field.Names) == 0 {
			n++
		}
	}
	return false
}

// isContext reports an identifier declared as a context.Context parameter
// or assigned from a call of package context (imports are stand-ins here,
// so the declaration is read instead of the type).
func (c *sqlChecker) isContext(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	if !ok || c.info.Uses[id] == nil {
		return false
	}
	obj := c.info.Uses[id]
	isPkg := func(x ast.Expr, name string) bool {
		sel, ok := x.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		p, ok := sel.X.(*ast.Ident)
		return ok && p.Name == "context" && (name == "" || sel.Sel.Name == name)
	}
	found := false
	for _, f := range c.files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if isPkg(n.Type, "Context") {
					for _, name := range n.Names {
						found = found || c.info.Defs[name] == obj
					}
				}
			case *ast.AssignStmt:
				if len(n.Rhs) == 1 {
					if call, ok := n.Rhs[0].(*ast.CallExpr); ok && isPkg(call.Fun, "") && len(n.Lhs) > 0 {
						if lhs, ok := n.Lhs[0].(*ast.Ident); ok {
							found = found || c.info.Defs[lhs] == obj
						}
					}
				}
			}
			return !found
		})
	}
	return found
}

func (c *sqlChecker) isConst(e ast.Expr) bool {
	tv, ok := c.info.Types[e]
	return ok && tv.Value != nil
}

func (c *sqlChecker) text(e ast.Expr) string {
	var b strings.Builder
	_ = printer.Fprint(&b, c.fset, e)
	s := b.String()
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

func (c *sqlChecker) enclosing(pos token.Pos) string {
	if fd := c.funcAt(pos); fd != nil {
		return fd.Name.Name
	}
	return "package scope"
}

func (c *sqlChecker) funcAt(pos token.Pos) *ast.FuncDecl {
	for _, f := range c.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= pos && pos < fd.End() {
				return fd
			}
		}
	}
	return nil
}

// clean reports whether e is a string (or []string) made of constants only.
// env gives the cleanness of the parameters of a function being followed
// from one call site.
func (c *sqlChecker) clean(e ast.Expr, env map[*types.Var]bool) bool {
	if c.isConst(e) {
		return true
	}
	switch e := e.(type) {
	case *ast.ParenExpr:
		return c.clean(e.X, env)
	case *ast.BinaryExpr:
		return e.Op == token.ADD && c.clean(e.X, env) && c.clean(e.Y, env)
	case *ast.IndexExpr:
		return c.clean(e.X, env)
	case *ast.SliceExpr:
		return c.clean(e.X, env)
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if !c.clean(el, env) {
				return false
			}
		}
		return true
	case *ast.Ident:
		switch obj := c.info.Uses[e].(type) {
		case *types.Const:
			return true
		case *types.Var:
			return c.cleanVar(obj, env)
		}
		return false
	case *ast.CallExpr:
		return c.cleanCall(e, 0, env)
	}
	return false
}

// cleanCall: strings.Join, append and make of clean parts, or a call of a
// function of this package whose result number idx is clean when its
// parameters are bound to this call's arguments.
func (c *sqlChecker) cleanCall(call *ast.CallExpr, idx int, env map[*types.Var]bool) bool {
	allClean := func() bool {
		for _, a := range call.Args {
			if !c.clean(a, env) {
				return false
			}
		}
		return true
	}
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		switch obj := c.info.Uses[fun].(type) {
		case *types.Builtin:
			switch obj.Name() {
			case "append":
				return allClean()
			case "make":
				return true // zero values
			}
			return false
		case *types.Func:
			return c.cleanResult(obj, call, idx, env)
		}
		return false
	case *ast.SelectorExpr:
		if id, ok := fun.X.(*ast.Ident); ok {
			if pn, ok := c.info.Uses[id].(*types.PkgName); ok {
				switch pn.Imported().Path() + "." + fun.Sel.Name {
				case "strings.Join":
					return allClean()
				case "strconv.Itoa":
					return true // digits, whatever the int: a $N placeholder
				}
				return false
			}
		}
		if obj, ok := c.info.Uses[fun.Sel].(*types.Func); ok {
			return c.cleanResult(obj, call, idx, env) // a method of this package
		}
	}
	return false
}

func (c *sqlChecker) cleanResult(fn *types.Func, call *ast.CallExpr, idx int, env map[*types.Var]bool) bool {
	fd := c.funcs[fn]
	if fd == nil || fd.Body == nil {
		return false // not ours: nothing is known about what it returns
	}
	key := [2]any{call, idx}
	if c.visiting[key] {
		return true // recursion: decided by the other paths
	}
	c.visiting[key] = true
	defer delete(c.visiting, key)
	inner := map[*types.Var]bool{}
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, name := range field.Names {
			if v, ok := c.info.Defs[name].(*types.Var); ok && i < len(call.Args) {
				inner[v] = c.clean(call.Args[i], env)
			}
			i++
		}
	}
	ok := true
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false // its returns are not fd's
		case *ast.ReturnStmt:
			if len(n.Results) == 0 {
				ok = false // named results: not followed
			} else if len(n.Results) > idx && !c.clean(n.Results[idx], inner) {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// cleanVar: every value ever stored in v (declaration, assignment, +=,
// element assignment, append) is clean, and v's address is never taken.
// A parameter is clean only as bound by env.
func (c *sqlChecker) cleanVar(v *types.Var, env map[*types.Var]bool) bool {
	if clean, ok := env[v]; ok {
		return clean
	}
	fd := c.funcAt(v.Pos())
	if fd == nil || fd.Body == nil || v.Pos() < fd.Body.Pos() {
		return false // a package variable or an unbound parameter: could hold anything
	}
	if c.visiting[v] {
		return true
	}
	c.visiting[v] = true
	defer delete(c.visiting, v)
	is := func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return c.info.Defs[e] == v || c.info.Uses[e] == v
		case *ast.IndexExpr:
			id, ok := e.X.(*ast.Ident)
			return ok && (c.info.Uses[id] == v)
		}
		return false
	}
	ok := true
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if !is(l) {
					continue
				}
				switch {
				case len(n.Lhs) == len(n.Rhs):
					ok = c.clean(n.Rhs[i], env)
				case len(n.Rhs) == 1:
					call, isCall := n.Rhs[0].(*ast.CallExpr)
					ok = isCall && c.cleanCall(call, i, env)
				default:
					ok = false
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if c.info.Defs[name] != v {
					continue
				}
				switch {
				case len(n.Values) == 0:
				case len(n.Values) == len(n.Names):
					ok = c.clean(n.Values[i], env)
				default:
					ok = false
				}
			}
		case *ast.RangeStmt:
			if (n.Key != nil && is(n.Key)) || (n.Value != nil && is(n.Value)) {
				ok = false // ranged over: as clean as what is ranged over, not followed
			}
		case *ast.UnaryExpr:
			if n.Op == token.AND && is(n.X) {
				ok = false // &v: written by someone else
			}
		}
		return ok
	})
	return ok
}

// srcImporter type-checks this module's packages from source and stands
// in an empty package for everything else.
type srcImporter struct {
	fset *token.FileSet
	done map[string]*types.Package
}

func (s *srcImporter) Import(path string) (*types.Package, error) {
	if p, ok := s.done[path]; ok {
		return p, nil
	}
	if rel, ok := strings.CutPrefix(path, modulePath+"/"); ok {
		files, err := parseDir(s.fset, filepath.Join("..", rel))
		if err == nil {
			conf := types.Config{Importer: s, Error: func(error) {}}
			p, _ := conf.Check(path, s.fset, files, nil)
			s.done[path] = p
			return p, nil
		}
	}
	name := filepath.Base(path)
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
		name = filepath.Base(filepath.Dir(path))
	}
	name = strings.NewReplacer("-", "_", ".", "_").Replace(name)
	p := types.NewPackage(path, name)
	p.MarkComplete()
	s.done[path] = p
	return p, nil
}

func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return files, nil
}
