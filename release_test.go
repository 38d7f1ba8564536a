package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// What a release ships, checked without cross-compiling: the licence, the
// version make build stamps, the systemd units (run against a throwaway
// root) and the container recipe. make release itself is run by hand.

func TestLicenseIsApache2(t *testing.T) {
	b, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004",
		"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
}

func TestVersionScriptGivesTagsAndPseudoVersions(t *testing.T) {
	needBinaries(t, "bash", "git")
	script, err := filepath.Abs("scripts/version.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
			"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := func() string {
		t.Helper()
		out, err := exec.Command("bash", script, dir).Output()
		if err != nil {
			t.Fatalf("version.sh: %v", err)
		}
		return strings.TrimSpace(string(out))
	}
	pseudo := func(base string) {
		t.Helper()
		v := version()
		rev, _ := module.PseudoVersionRev(v)
		b, _ := module.PseudoVersionBase(v)
		when, _ := module.PseudoVersionTime(v)
		if !module.IsPseudoVersion(v) || b != base || !strings.HasPrefix(git("rev-parse", "HEAD"), rev) || len(rev) != 12 ||
			when.Format("20060102150405") != "20260102030405" {
			t.Errorf("version %q: not the Go pseudo-version of HEAD above %q", v, base)
		}
	}

	if v := version(); v != "" {
		t.Errorf("outside a git checkout: %q", v)
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "one")
	pseudo("")
	git("tag", "v0.3.0")
	if v := version(); v != "v0.3.0" {
		t.Errorf("at tag v0.3.0: %q", v)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != "v0.3.0+dirty" || !semver.IsValid(v) {
		t.Errorf("at tag v0.3.0 with a change: %q", v)
	}
	git("add", "f")
	git("commit", "-q", "-m", "two")
	pseudo("v0.3.0")
	if v := version(); !strings.HasPrefix(v, "v0.3.1-0.") {
		t.Errorf("after v0.3.0: %q", v)
	}
	git("tag", "v0.4.0-rc.1")
	if v := version(); v != "v0.4.0-rc.1" {
		t.Errorf("at tag v0.4.0-rc.1: %q", v)
	}
	git("commit", "-q", "--allow-empty", "-m", "three")
	pseudo("v0.4.0-rc.1")
	git("tag", "v0.4.0")
	git("tag", "v0.4.0-rc.2")
	git("tag", "not-a-version")
	if v := version(); v != "v0.4.0" {
		t.Errorf("at tags v0.4.0 and v0.4.0-rc.2: %q", v)
	}
}

func TestMakeBuildStampsTheVersion(t *testing.T) {
	bin := makeBuild(t)
	out, err := exec.Command("make", "-s", "--no-print-directory", "version").Output()
	if err != nil {
		t.Fatalf("make version: %v", err)
	}
	want := strings.TrimSpace(string(out))
	if !semver.IsValid(want) {
		t.Fatalf("make version printed %q, not a semantic version", want)
	}
	c := exec.Command(bin, "version", "--json")
	c.Env = append(os.Environ(), quickExit)
	out, err = c.Output()
	if err != nil {
		t.Fatalf("version --json: %v", err)
	}
	var got struct{ Version, Commit string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want || got.Commit != strings.TrimSpace(string(head)) {
		t.Fatalf("make build's binary reports version %q, commit %q; want %q, %s", got.Version, got.Commit, want, head)
	}
}

// unit is a systemd unit file: each key's values, in order.
type unit map[string][]string

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.HasSuffix(line, `\`) {
				t.Fatalf("%s: a line this test cannot read: %q", path, line)
			}
			u[section+"."+k] = append(u[section+"."+k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u unit) one(t *testing.T, key string) string {
	t.Helper()
	if len(u[key]) != 1 {
		t.Fatalf("%s: want one value, have %q", key, u[key])
	}
	return u[key][0]
}

const unitDir = "packaging/systemd"

func TestSystemdUnits(t *testing.T) {
	services := []string{"lockledger-checkpoint", "lockledger-verify"}
	for _, name := range services {
		s := readUnit(t, filepath.Join(unitDir, name+".service"))
		if s.one(t, "Service.Type") != "oneshot" {
			t.Errorf("%s: Type=%s", name, s["Service.Type"])
		}
		if u := s.one(t, "Service.User"); u == "" || u == "root" || u == "0" {
			t.Errorf("%s runs as %q, not a dedicated user", name, u)
		}
		for _, want := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
			"PrivateDevices=yes", "CapabilityBoundingSet=", "SystemCallFilter=@system-service", "MemoryDenyWriteExecute=yes"} {
			k, v, _ := strings.Cut(want, "=")
			if !slices.Contains(s["Service."+k], v) {
				t.Errorf("%s: no %s", name, want)
			}
		}
		tm := readUnit(t, filepath.Join(unitDir, name+".timer"))
		if tm.one(t, "Timer.OnCalendar") == "" || tm.one(t, "Timer.Persistent") != "true" || tm.one(t, "Install.WantedBy") != "timers.target" {
			t.Errorf("%s.timer: %v", name, tm)
		}
	}
	v := readUnit(t, filepath.Join(unitDir, "lockledger-verify.service"))
	if !strings.Contains(v.one(t, "Unit.Wants"), "lockledger-checkpoint.service") || !strings.Contains(v.one(t, "Unit.After"), "lockledger-checkpoint.service") {
		t.Errorf("verify does not run after a checkpoint: Wants=%q After=%q", v["Unit.Wants"], v["Unit.After"])
	}

	bin := makeBuild(t)
	t.Run("systemd-analyze", func(t *testing.T) { systemdAnalyze(t, bin) })
	t.Run("ExecStart", func(t *testing.T) { runUnits(t, bin) })
}

// systemdAnalyze checks the units' syntax and hardening with systemd's own
// tools, the binary they run being bin.
func systemdAnalyze(t *testing.T, bin string) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("SKIPPED: systemd-analyze not found, so the units' syntax is not checked by systemd")
	}
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(unitDir, "lockledger-*"))
	if err != nil || len(files) != 4 {
		t.Fatalf("units: %v %v", files, err)
	}
	var copies []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(c, bytes.ReplaceAll(b, []byte("/usr/local/bin/lockledger"), []byte(bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, c)
	}
	// systemd-analyze verify exits 0 on an unknown key or a bad value: it
	// only warns, so any output fails the test.
	out, err := exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, copies...)...).CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	exposure := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)
	for _, c := range copies {
		if !strings.HasSuffix(c, ".service") {
			continue
		}
		out, err := exec.Command("systemd-analyze", "security", "--offline=yes", c).CombinedOutput()
		if err != nil && !exposure.Match(out) {
			t.Logf("systemd-analyze security --offline: %v (older systemd?): exposure not checked\n%s", err, out)
			continue
		}
		m := exposure.FindSubmatch(out)
		if m == nil {
			t.Errorf("systemd-analyze security: no exposure level in\n%s", out)
			continue
		}
		if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
			t.Errorf("%s: exposure level %s (want at most 2.0)\n%s", filepath.Base(c), m[1], out)
		}
	}
}

// runUnits runs each service's ExecStart as systemd would start it, with
// its Environment=, LoadCredential= and StateDirectory=, every path moved
// under a temporary directory: checkpoint, then verify, on a ledger set up
// as lockledger-checkpoint.service says. The units' user has no home it
// can write, as under systemd: useradd --no-create-home gives it none, and
// ProtectHome=yes hides /home from the unit anyway; the set-up runs as
// the administrator, who has one.
func runUnits(t *testing.T, bin string) {
	tmp := t.TempDir()
	under := func(p string) string { return filepath.Join(tmp, p) }
	moved := strings.NewReplacer("/usr/local/bin/lockledger", bin, "/srv/lockledger", under("srv/lockledger"),
		"/etc/lockledger", under("etc/lockledger"), "/var/lib/", under("var/lib")+"/", "%d", under("credentials"))
	for _, d := range []string{"etc/lockledger", "credentials", "root"} {
		if err := os.MkdirAll(under(d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A home below a regular file: no directory can be made there, by
	// root either (a test run as root ignores permission bits).
	if err := os.WriteFile(under("home"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + under("root"), "USER=root", quickExit}
	unitEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + under("home/lockledger"), "USER=lockledger", quickExit}
	cli := func(want int, args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		out, err := c.Output()
		if code := c.ProcessState.ExitCode(); code != want {
			t.Fatalf("lockledger %v: exit %d (%v), want %d\n%s", args, code, err, want, out)
		}
		return string(out)
	}
	root := under("srv/lockledger")
	cli(0, "--root", root, "init")
	vkey := cli(0, "keygen", "--name", "ops-ledger", "-o", under("etc/lockledger/signing.key"))
	if err := os.WriteFile(under("etc/lockledger/verifier.key"), []byte(vkey), 0o644); err != nil {
		t.Fatal(err)
	}
	// The set-up's members.vkey: the key the root's writers sign with
	// (here the administrator's own), the last field of trust export's line.
	var members string
	for line := range strings.Lines(cli(0, "--root", root, "trust", "export")) {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(line, "#") {
			members = f[len(f)-1]
		}
	}
	if err := os.WriteFile(under("etc/lockledger/members.vkey"), []byte(members+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli(0, "--root", root, "acquire", "deploy", "--pid", strconv.Itoa(os.Getpid()), "--request-id", "r1")
	cli(0, "--root", root, "release", "deploy", "--request-id", "r1")

	start := func(name string) (string, int) {
		t.Helper()
		u := readUnit(t, filepath.Join(unitDir, name+".service"))
		uenv := slices.Clone(unitEnv)
		for _, kv := range u["Service.Environment"] {
			if strings.ContainsAny(kv, `"' `) {
				t.Fatalf("%s: Environment=%s: quoting or several assignments, which this test does not read", name, kv)
			}
			uenv = append(uenv, moved.Replace(kv))
		}
		for _, cred := range u["Service.LoadCredential"] {
			id, path, _ := strings.Cut(cred, ":")
			b, err := os.ReadFile(moved.Replace(path))
			if err != nil {
				t.Fatalf("%s: LoadCredential=%s: %v", name, cred, err)
			}
			if err := os.WriteFile(filepath.Join(under("credentials"), id), b, 0o400); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
		for _, d := range u["Service.StateDirectory"] {
			if err := os.MkdirAll(under("var/lib/"+d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		cmdline := u.one(t, "Service.ExecStart")
		if strings.ContainsAny(strings.ReplaceAll(cmdline, "%d", ""), `"'%$\`) {
			t.Fatalf("%s: ExecStart=%s: quoting, variables or specifiers this test does not read", name, cmdline)
		}
		argv := strings.Fields(moved.Replace(cmdline))
		if argv[0] != bin {
			t.Fatalf("%s: ExecStart runs %s, not /usr/local/bin/lockledger", name, argv[0])
		}
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = uenv
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Logf("%s: %v\n%s", name, err, stderr.String())
		}
		return string(out), c.ProcessState.ExitCode()
	}
	out, code := start("lockledger-checkpoint")
	if code != 0 || !strings.Contains(out, "— ops-ledger ") {
		t.Fatalf("checkpoint: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(under("var/lib/lockledger-checkpoints/ledger.checkpoints")); err != nil || !bytes.Contains(b, []byte("— ops-ledger ")) {
		t.Fatalf("no checkpoint in the witness file: %v %q", err, b)
	}
	out, code = start("lockledger-verify")
	if code != 0 || !strings.Contains(out, "verify: OK") || !strings.Contains(out, "match checkpoint") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
}

func TestContainerRecipe(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(string(b), -1)
	if len(stages) < 3 {
		t.Fatalf("Dockerfile: want a build stage and a final stage")
	}
	build, final := stages[len(stages)-2], stages[len(stages)-1]
	if !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, "-trimpath") {
		t.Errorf("the build stage does not build a static binary with -trimpath:\n%s", build)
	}
	image, _, _ := strings.Cut(final, "\n")
	if image != "scratch" && !strings.HasPrefix(image, "gcr.io/distroless/static") {
		t.Errorf("final image %q: want scratch or distroless static", image)
	}
	field := func(key string) string {
		m := regexp.MustCompile(`(?m)^`+key+` (.*)$`).FindAllStringSubmatch(final, -1)
		if len(m) != 1 {
			t.Fatalf("final stage: want one %s, have %d", key, len(m))
		}
		return m[0][1]
	}
	if u, _, _ := strings.Cut(field("USER"), ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q: want a non-root user", u)
	}
	root, ok := strings.CutPrefix(field("ENV"), "LOCKLEDGER_ROOT=")
	if !ok || root == "" {
		t.Fatalf("final stage: no ENV LOCKLEDGER_ROOT=")
	}
	if v := field("VOLUME"); v != `["`+root+`"]` {
		t.Errorf("VOLUME %s: want LOCKLEDGER_ROOT %s", v, root)
	}
	if !regexp.MustCompile(`(?m)^COPY --from=build --chown=65532:65532 \S+ ` + regexp.QuoteMeta(root) + `$`).MatchString(final) {
		t.Errorf("the root %s is not made in the image, owned by its user", root)
	}
}

func needBinaries(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("SKIPPED: %s not found", n)
		}
	}
}

// makeBuild runs make build once for the tests that need its binary, into
// a temporary directory, with the flags this test binary was built with
// (the race detector, cgo) so that the build reuses the packages compiled
// for the test and only links.
func makeBuild(t *testing.T) string {
	t.Helper()
	needBinaries(t, "make", "git", "bash")
	if err := exec.Command("git", "rev-parse", "--verify", "-q", "HEAD").Run(); err != nil {
		t.Skip("SKIPPED: not a git checkout: make build has no version to stamp")
	}
	built.once.Do(func() { built.bin, built.err = buildWithMake() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

func buildWithMake() (string, error) {
	cgo, err := exec.Command("go", "env", "CGO_ENABLED").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	if built.dir, err = os.MkdirTemp("", "lockledger-release-test-"); err != nil {
		return "", err
	}
	bin := filepath.Join(built.dir, "lockledger")
	args := []string{"-s", "--no-print-directory", "build", "BIN=" + bin, "BUILD_CGO=" + strings.TrimSpace(string(cgo))}
	if raceEnabled() {
		// With the -gcflags too (make test leaves SQLite's translated C
		// uninstrumented): else that package is compiled again, with -race.
		flags := "-race"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "-gcflags" && !strings.ContainsAny(s.Value, " \t'\"") {
					flags += " -gcflags=" + s.Value
				}
			}
		}
		args = append(args, "BUILD_CGO=1", "BUILDFLAGS="+flags)
	}
	c := exec.Command("make", args...)
	c.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") || strings.HasPrefix(kv, "MFLAGS=")
	})
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make build: %w\n%s", err, out)
	}
	return bin, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// quickExit: a binary built with the race detector sleeps 1 s at exit unless told otherwise.
const quickExit = "GORACE=atexit_sleep_ms=0"

// raceEnabled reports whether the test binary is built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.Contains(bi.Settings, debug.BuildSetting{Key: "-race", Value: "true"})
}
