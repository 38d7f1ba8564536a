package clitest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// envCPU turns on the account of the CPU the commands used: with
// LOCKLEDGER_TEST_CPU=1 the test binary prints, when it ends, the CPU time
// (user+system) of the commands each test ran and of each subcommand, with
// how many runs; any other value is a file the account is appended to
// (go test hides a passing package's output unless -v).
const envCPU = "LOCKLEDGER_TEST_CPU"

// cpu is every command the test binary ran through Command or Output
// while the account is on, read when the binary ends: by then each
// command a test started has been waited for, and has its ProcessState.
var cpu struct {
	sync.Mutex
	on   bool
	cmds map[*exec.Cmd]cpuKey
}

type cpuKey struct{ test, command string }

func init() { cpu.on = os.Getenv(envCPU) != "" }

// account notes c, built for root, for the account.
func account(c *exec.Cmd, root string) {
	if !cpu.on {
		return
	}
	cpu.Lock()
	defer cpu.Unlock()
	if _, ok := cpu.cmds[c]; ok {
		return
	}
	if cpu.cmds == nil {
		cpu.cmds = map[*exec.Cmd]cpuKey{}
	}
	cpu.cmds[c] = cpuKey{testOf(root), commandOf(c.Args)}
}

// rootOf is the root in c's environment (Env), else "".
func rootOf(c *exec.Cmd) string {
	for _, kv := range c.Env {
		if r, ok := strings.CutPrefix(kv, "LOCKLEDGER_ROOT="); ok {
			return r
		}
	}
	return ""
}

// testOf names the test whose t.TempDir holds root: its directory's name
// without the random digits os.MkdirTemp adds.
func testOf(root string) string {
	rel, err := filepath.Rel(filepath.Clean(os.TempDir()), filepath.Clean(root))
	if root == "" || err != nil || !strings.HasPrefix(rel, "Test") {
		return "(no test root)"
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	return strings.TrimRight(first, "0123456789")
}

// commandOf is the subcommand (the first argument neither a flag nor a
// path, as a global flag's value is) of a
// lockledger command line, else the program's name.
func commandOf(args []string) string {
	if len(args) == 0 {
		return "?"
	}
	prog := filepath.Base(args[0])
	if prog != filepath.Base(self()) && prog != "lockledger" {
		return prog
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") && !strings.Contains(a, "/") {
			return a
		}
	}
	return prog
}

type cpuRow struct {
	name string
	cpu  time.Duration
	runs int
}

// report writes the account (nothing unless it is on).
func report() {
	v := os.Getenv(envCPU)
	if v == "" {
		return
	}
	var w io.Writer = os.Stdout
	if v != "1" {
		f, err := os.OpenFile(v, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "clitest: %s: %v\n", envCPU, err)
			return
		}
		defer f.Close()
		w = f
	}
	byTest, byCommand := map[string]*cpuRow{}, map[string]*cpuRow{}
	var total time.Duration
	var runs int
	cpu.Lock()
	for c, k := range cpu.cmds {
		if c.ProcessState == nil {
			continue
		}
		d := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
		total += d
		runs++
		for _, r := range []struct {
			m    map[string]*cpuRow
			name string
		}{{byTest, k.test}, {byCommand, k.command}} {
			row := r.m[r.name]
			if row == nil {
				row = &cpuRow{name: r.name}
				r.m[r.name] = row
			}
			row.cpu += d
			row.runs++
		}
	}
	cpu.Unlock()
	var ru syscall.Rusage
	var children time.Duration
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	fmt.Fprintf(w, "clitest CPU: %d commands %.1f s; every child process of the test binary %.1f s (the rest: go build, wrappers, servers)\n",
		runs, total.Seconds(), children.Seconds())
	for _, t := range []struct {
		title string
		m     map[string]*cpuRow
	}{{"test", byTest}, {"command", byCommand}} {
		rows := make([]*cpuRow, 0, len(t.m))
		for _, r := range t.m {
			rows = append(rows, r)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].cpu > rows[j].cpu })
		fmt.Fprintf(w, "%10s %6s %8s  %s\n", "CPU s", "runs", "ms/run", t.title)
		for _, r := range rows {
			fmt.Fprintf(w, "%10.2f %6d %8.1f  %s\n", r.cpu.Seconds(), r.runs, float64(r.cpu.Milliseconds())/float64(r.runs), r.name)
		}
	}
}
