package cli_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockledger/lockledger/cli"
	"github.com/lockledger/lockledger/cli/invocation"
	"github.com/lockledger/lockledger/internal/clitest"
)

const module = "github.com/lockledger/lockledger"

// sourcePackage is one of the module's packages linked into lockledger.
type sourcePackage struct {
	path  string
	files []*ast.File
	names []string // the files' names
}

// binaryPackages parses the module's packages that the lockledger binary
// links (go list -deps), without their tests.
func binaryPackages(t *testing.T) []sourcePackage {
	t.Helper()
	// go test puts its own toolchain's bin first on PATH.
	gobin, err := osexec.LookPath("go")
	if err != nil {
		t.Fatal("no go command to list the binary's packages")
	}
	cmd := osexec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", module)
	cmd.Dir = ".."
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, errOut.String())
	}
	fset := token.NewFileSet()
	var pkgs []sourcePackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || (f[0] != module && !strings.HasPrefix(f[0], module+"/")) {
			continue
		}
		p := sourcePackage{path: f[0]}
		for _, name := range strings.Fields(f[2]) {
			file, err := parser.ParseFile(fset, filepath.Join(f[1], name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			p.files = append(p.files, file)
			p.names = append(p.names, name)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list named only %d of the module's packages:\n%s", len(pkgs), out)
	}
	return pkgs
}

// stringConsts are the string constants of every package, by "path.Name".
func stringConsts(pkgs []sourcePackage) map[string]string {
	exprs := map[string]ast.Expr{}
	pkgOf := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							exprs[p.path+"."+n.Name] = vs.Values[i]
							pkgOf[p.path+"."+n.Name] = p.path
						}
					}
				}
			}
		}
	}
	out := map[string]string{}
	var eval func(pkg string, e ast.Expr) (string, bool)
	eval = func(pkg string, e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			}
		case *ast.Ident:
			if x, ok := exprs[pkg+"."+e.Name]; ok {
				return eval(pkg, x)
			}
		case *ast.BinaryExpr:
			a, ok1 := eval(pkg, e.X)
			b, ok2 := eval(pkg, e.Y)
			return a + b, ok1 && ok2 && e.Op == token.ADD
		}
		return "", false
	}
	for k, x := range exprs {
		if s, ok := eval(pkgOf[k], x); ok {
			out[k] = s
		}
	}
	return out
}

// envReads are the variables the code names in os.Getenv and os.LookupEnv,
// with where; a name it cannot tell is an error: the table could not be
// checked against it.
func envReads(t *testing.T, pkgs []sourcePackage) map[string]string {
	t.Helper()
	consts := stringConsts(pkgs)
	reads := map[string]string{}
	for _, p := range pkgs {
		for fi, f := range p.files {
			imports := map[string]string{}
			for _, im := range f.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				name := path[strings.LastIndex(path, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = path
			}
			name := func(e ast.Expr) []string {
				switch e := e.(type) {
				case *ast.BasicLit:
					s, err := strconv.Unquote(e.Value)
					if err == nil {
						return []string{s}
					}
				case *ast.SelectorExpr:
					if x, ok := e.X.(*ast.Ident); ok {
						if s, ok := consts[imports[x.Name]+"."+e.Sel.Name]; ok {
							return []string{s}
						}
					}
				case *ast.Ident:
					if s, ok := consts[p.path+"."+e.Name]; ok {
						return []string{s}
					}
					// for _, k := range []string{"A", "B"} { os.Getenv(k) }
					if e.Obj != nil {
						if as, ok := e.Obj.Decl.(*ast.AssignStmt); ok && len(as.Rhs) == 1 {
							if u, ok := as.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.RANGE {
								if cl, ok := u.X.(*ast.CompositeLit); ok {
									var out []string
									for _, el := range cl.Elts {
										lit, ok := el.(*ast.BasicLit)
										if !ok {
											return nil
										}
										s, _ := strconv.Unquote(lit.Value)
										out = append(out, s)
									}
									return out
								}
							}
						}
					}
				}
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || (imports[x.Name] != "os" && imports[x.Name] != "syscall") {
					return true
				}
				names := name(call.Args[0])
				where := p.path + " " + p.names[fi]
				if len(names) == 0 {
					t.Errorf("%s: %s.%s reads a variable whose name this test cannot tell: name it with a string constant",
						where, imports[sel.X.(*ast.Ident).Name], sel.Sel.Name)
				}
				for _, n := range names {
					reads[n] = where
				}
				return true
			})
		}
	}
	return reads
}

// TestEveryVariableReadIsDocumented: each variable the binary's code reads
// is in cli.Environment (behind help environment and the man pages), and
// each one documented as read is read somewhere (or set, for run's).
func TestEveryVariableReadIsDocumented(t *testing.T) {
	pkgs := binaryPackages(t)
	reads := envReads(t, pkgs)
	for _, want := range []string{"LOCKLEDGER_ROOT", "LOCKLEDGER_HOST_ID", "LOCKLEDGER_ACTOR", "NO_COLOR"} {
		if _, ok := reads[want]; !ok {
			t.Fatalf("the scan missed %s, which the code reads; it found %v", want, reads)
		}
	}
	documented := map[string]cli.EnvVar{}
	for _, v := range cli.Environment {
		if _, dup := documented[v.Name]; dup {
			t.Errorf("%s is documented twice", v.Name)
		}
		documented[v.Name] = v
	}
	for name, where := range reads {
		v, ok := documented[name]
		if !ok {
			t.Errorf("%s reads %s, which cli.Environment does not document (help environment, the man pages)", where, name)
		} else if v.Driver || v.Set && !slices.Contains(v.Commands, "write") {
			t.Errorf("%s reads %s, documented as only set or read by the driver", where, name)
		}
	}
	var src strings.Builder
	for _, p := range pkgs {
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					src.WriteString(lit.Value)
				}
				return true
			})
		}
	}
	for _, v := range cli.Environment {
		switch {
		case v.Driver:
			if !strings.HasSuffix(v.Name, "*") {
				t.Errorf("%s: a driver's variables are documented as a family (PG*)", v.Name)
			}
		case v.Set:
			if !strings.Contains(src.String(), `"`+v.Name+`=`) {
				t.Errorf("%s is documented as set for run's command, but no code sets it", v.Name)
			}
		default:
			if _, ok := reads[v.Name]; !ok {
				t.Errorf("%s is documented but nothing in the binary reads it", v.Name)
			}
		}
		if v.Meaning == "" {
			t.Errorf("%s: no meaning", v.Name)
		}
	}
}

// TestHelpTopics: help environment and help exit-codes print their tables,
// help topics lists the topics, and each exits 0; an unknown topic exits 2 naming it and the known ones.
func TestHelpTopics(t *testing.T) {
	root := filepath.Join(t.TempDir(), "none")
	env := clitest.Must(t, 0, root, "help", "environment").Stdout
	for _, v := range cli.Environment {
		if !strings.Contains(env, "  "+v.Name+"\n") {
			t.Errorf("help environment lacks %s:\n%s", v.Name, env)
		}
	}
	codes := clitest.Must(t, 0, root, "help", "exit-codes").Stdout
	for _, e := range cli.ExitStatuses {
		if !strings.Contains(codes, "  "+e.Code+" ") {
			t.Errorf("help exit-codes lacks %s:\n%s", e.Code, codes)
		}
	}
	topics := clitest.Must(t, 0, root, "help", "topics").Stdout
	for _, name := range cli.HelpTopics() {
		if !strings.Contains(topics, "  "+name+" ") {
			t.Errorf("help topics lacks %s:\n%s", name, topics)
		}
	}
	if !strings.Contains(clitest.Must(t, 0, root, "help", "acquire").Stdout, "lockledger acquire NAME") {
		t.Errorf("help acquire is not acquire's help")
	}
	for _, args := range [][]string{{"help", "enviroment"}, {"help", "acquire", "extra"}} {
		r := clitest.Run(t, root, args...)
		if r.Code != invocation.ExitUsage || !strings.Contains(r.Stderr, strconv.Quote(strings.Join(args[1:], " "))) ||
			!strings.Contains(r.Stderr, "environment, exit-codes") || r.Stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming the topic and the known ones", args, r.Code, r.Stdout, r.Stderr)
		}
	}
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Errorf("help created the root: %v", err)
	}
	if got, _ := complete(t, root, "help", "e"); !slices.Contains(got, "environment") || !slices.Contains(got, "exit-codes") {
		t.Errorf("help e<Tab> = %v", got)
	}
	if got, _ := complete(t, root, "help", "to"); !slices.Contains(got, "topics") {
		t.Errorf("help to<Tab> = %v", got)
	}
}
