package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/lockledger/lockledger/internal/clitest"
)

// docPages are the pages whose command blocks TestDocsCommandBlocks runs.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, pages...)
}

// TestDocsHaveNoMergeMarkers: a page of the repository left with a merge
// conflict's markers in it says two things at once.
func TestDocsHaveNoMergeMarkers(t *testing.T) {
	t.Parallel()
	top, err := filepath.Glob("../*.md")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`(?m)^(<<<<<<<|>>>>>>>)( |$)`)
	for _, page := range slices.Compact(slices.Sorted(slices.Values(append(top, docPages(t)...)))) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		if loc := marker.FindIndex(b); loc != nil {
			t.Errorf("%s:%d: a merge conflict's marker", page, 1+strings.Count(string(b[:loc[0]]), "\n"))
		}
	}
}

// TestDocsCommandBlocks runs every ```sh block of README.md and docs/*.md
// as docs/contributing.md describes: each page on a fresh root and trust
// store of its own, its blocks in order, each command's exit status and
// shown output checked. A command block must be run or marked norun or pg.
func TestDocsCommandBlocks(t *testing.T) {
	t.Parallel()
	clitest.NeedBinary(t, "bash")
	var ran, commands, norun, pg int
	for _, page := range docPages(t) {
		blocks, err := docBlocks(page)
		if err != nil {
			t.Fatal(err)
		}
		var run []docBlock
		for _, b := range blocks {
			switch {
			case !b.isCommands():
			case b.has("norun"):
				norun++
			case b.has("pg"):
				pg++
			case (b.lang == "sh" || b.lang == "console") && len(b.tags) == 0:
				run = append(run, b)
			default:
				t.Errorf("%s: a block of commands neither run (```sh) nor marked (```sh norun, ```sh pg); info %q %q", b, b.lang, b.tags)
			}
		}
		if len(run) == 0 {
			continue
		}
		t.Run(filepath.Base(page), func(t *testing.T) {
			env, dir, paths, machine := docEnv(t)
			commands += runDocBlocks(t, run, env, dir, paths, machine)
			ran += len(run)
		})
	}
	t.Logf("doc blocks: %d run (%d commands), %d marked norun, %d marked pg (run by TestPostgresREADMESetUpAsWritten)", ran, commands, norun, pg)
	if ran == 0 {
		t.Fatal("no command block ran")
	}
}

// machinePaths are the absolute paths the pages' commands name for files
// outside every root; the doc test makes each a directory of its own and
// rewrites the commands to use it, as the PostgreSQL test rewrites the
// server's address.
var machinePaths = []string{"/etc/lockledger", "/mnt/audit"}

// docEnv is a page's world: lockledger on PATH (the test binary, through a
// wrapper), a fresh root and trust store, a home, and a working directory
// holding the scripts the pages call (./deploy.sh, ./migrate.sh).
//
// paths replaces the root's, trust store's and home's paths in what the
// commands print with the ones a user named alice has by default, which the
// pages show.
func docEnv(t *testing.T) (env []string, dir string, paths, machine *strings.Replacer) {
	t.Helper()
	base := t.TempDir()
	bin, dir, home := filepath.Join(base, "bin"), filepath.Join(base, "work"), filepath.Join(base, "home")
	for _, d := range []string{bin, dir, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wrapper := "#!/bin/sh\nexec " + strconv.Quote(clitest.Bin()) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "lockledger"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"deploy.sh", "migrate.sh", "build.sh"} {
		script := "#!/bin/sh\necho " + map[string]string{"deploy.sh": "deployed", "migrate.sh": "migrated", "build.sh": "built"}[s] + "\n"
		if err := os.WriteFile(filepath.Join(dir, s), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, trust := filepath.Join(base, "root"), filepath.Join(base, "trust")
	env = clitest.Env(root, "HOME="+home, "LOCKLEDGER_TRUST_DIR="+trust,
		"XDG_STATE_HOME="+filepath.Join(home, ".local/state"), "LOCKLEDGER_HOST_ID=vm", "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"PATH="+bin+":"+os.Getenv("PATH"))
	back := []string{root, "/home/alice/.local/state/lockledger", trust, "/home/alice/.config/lockledger",
		home, "/home/alice", dir, "/home/alice/work"}
	var there []string
	for _, p := range machinePaths {
		d := filepath.Join(base, "machine", p)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		there = append(there, p, d)
		back = append([]string{d, p}, back...)
	}
	return env, dir, strings.NewReplacer(back...), strings.NewReplacer(there...)
}

// runDocBlocks runs a page's blocks in one bash, as one terminal session,
// each command's output and exit status kept apart, and checks them against
// the page; it returns how many commands ran.
func runDocBlocks(t *testing.T, blocks []docBlock, env []string, dir string, paths, machine *strings.Replacer) int {
	t.Helper()
	type ran struct {
		b docBlock
		c docCommand
	}
	var cmds []ran
	for _, b := range blocks {
		for _, c := range b.commands() {
			cmds = append(cmds, ran{b, c})
		}
	}
	out := t.TempDir()
	var script strings.Builder
	for i, r := range cmds {
		fmt.Fprintf(&script, "{ %s\n} >%q 2>&1 </dev/null\n__rc=$?; echo $__rc >%q; (exit $__rc)\n",
			machine.Replace(r.c.text), filepath.Join(out, strconv.Itoa(i)), filepath.Join(out, strconv.Itoa(i)+".rc"))
	}
	// A hung command is cut off; each gets the bound clitest.Run gives one
	// command, so that a loaded machine's slow start-ups do not add up to it.
	limit := time.Duration(len(cmds)) * 2 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir, cmd.Env = dir, env
	if r := clitest.Exec(t, cmd); ctx.Err() != nil {
		t.Fatalf("the page's commands did not finish within %s\nstdout: %s\nstderr: %s", limit, r.Stdout, r.Stderr)
	}
	for i, r := range cmds {
		raw, _ := os.ReadFile(filepath.Join(out, strconv.Itoa(i)))
		printed := paths.Replace(string(raw))
		rc, err := os.ReadFile(filepath.Join(out, strconv.Itoa(i)+".rc"))
		if err != nil {
			t.Errorf("%s: %q did not run (an earlier command ended bash)", r.b, r.c.text)
			continue
		}
		code, _ := strconv.Atoi(strings.TrimSpace(string(rc)))
		if code != r.c.exit {
			t.Errorf("%s: %q exited %d, the page says %d\noutput:\n%s", r.b, r.c.text, code, r.c.exit, printed)
		}
		if ok, missing := matchShown(r.c.output, printed); !ok {
			t.Errorf("%s: %q printed no line like %q (shown lines must appear in order)\noutput:\n%s", r.b, r.c.text, missing, printed)
		}
	}
	return len(cmds)
}

// TestReadmeIsAFrontDoor: the README's first screen says how to install,
// make demo and make test; it stays short; its Documentation list links
// every page of docs/; and every relative link of README.md and docs/
// names a file that exists.
func TestReadmeIsAFrontDoor(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) > 300 {
		t.Errorf("README.md has %d lines; a front door has at most 300 (move the detail to docs/)", len(lines))
	}
	first := strings.Join(lines[:min(25, len(lines))], "\n")
	for _, want := range []string{"go install github.com/lockledger/lockledger@latest", "make demo", "make test"} {
		if !strings.Contains(first, want) {
			t.Errorf("README.md's first 25 lines do not show %q", want)
		}
	}
	_, list, ok := strings.Cut(string(raw), "\n## Documentation\n")
	if !ok {
		t.Fatal("README.md has no ## Documentation section")
	}
	list, _, _ = strings.Cut(list, "\n## ")
	pages, _ := filepath.Glob("../docs/*.md")
	for _, p := range pages {
		if name := "docs/" + filepath.Base(p); !strings.Contains(list, "]("+name+")") {
			t.Errorf("README.md's Documentation list does not link %s", name)
		}
	}
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target, anchor := m[1], strings.TrimPrefix(m[2], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s links %s, which does not exist", page, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !headingAnchors(t, file)[anchor] {
				t.Errorf("%s links %s#%s, a heading %s does not have", page, target, anchor, file)
			}
		}
	}
}

// headingAnchors are the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation dropped, spaces as hyphens.
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	blocks, err := docBlocks(file)
	if err != nil {
		t.Fatal(err)
	}
	inBlock := map[int]bool{}
	for _, b := range blocks {
		for i := b.line; i <= b.line+len(b.body)+1; i++ {
			inBlock[i] = true
		}
	}
	raw, _ := os.ReadFile(file)
	out := map[string]bool{}
	for i, l := range strings.Split(string(raw), "\n") {
		if inBlock[i+1] || !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var slug strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		out[slug.String()] = true
	}
	return out
}

// TestReadmeInstallRunsOnAFreshHome: the README's install line from this
// checkout, run as written (after its make build) in a home that has no
// ~/.local/bin yet, installs the binary there.
func TestReadmeInstallRunsOnAFreshHome(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`make build && ([^`]*install -m 755 bin/lockledger[^`]*)`").FindSubmatch(raw)
	if m == nil {
		t.Fatal("README.md shows no `make build && … install -m 755 bin/lockledger …` line")
	}
	work, home := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// What make build leaves: the binary in bin/.
	if err := os.WriteFile(filepath.Join(work, "bin", "lockledger"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("bash", "-c", string(m[1]))
	c.Dir, c.Env = work, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, out)
	}
	fi, err := os.Stat(filepath.Join(home, ".local", "bin", "lockledger"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("after %s: %v (mode %v), want ~/.local/bin/lockledger 0755", m[1], err, fi)
	}
}
