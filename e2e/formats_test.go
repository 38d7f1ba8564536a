package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockledger/lockledger/events"
	"github.com/lockledger/lockledger/formats"
	"github.com/lockledger/lockledger/internal/clitest"
)

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// keysOf lists a projected file's top-level keys in file order.
func keysOf(t *testing.T, format string, data []byte) []string {
	t.Helper()
	if format == formats.NameBSO {
		var keys []string
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			k, _, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("bso line %q is not key: value", line)
			}
			keys = append(keys, k)
		}
		return keys
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s file is not a JSON object: %s", format, data)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestFormatTargetsAreProjectedAndRemoved(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := t.TempDir()
	self := os.Getpid()
	host, _ := os.Hostname()
	cases := []struct {
		format string
		path   string
		keys   string
		check  func(h formats.Holder) bool
	}{
		{formats.NameTowerFleet, "tf/job-7.lock",
			"lock_version,lock_name,request_id,actor,intent,intent_version,host_id,pid,created_at,last_heartbeat_at,ttl_seconds,metadata",
			func(h formats.Holder) bool {
				return h.RequestID == "run-42" && h.Lock == "job-7" && h.TTL == 900*time.Second
			}},
		{formats.NameBSO, ".sprint-running", "pid,session_id,started_at,epic_spec,lock_version",
			func(h formats.Holder) bool { return h.RequestID == "run-42" && h.Intent == "epic5" }},
		{formats.NameBeads, ".beads/.exclusive-lock", "holder,pid,hostname,started_at,version",
			func(h formats.Holder) bool {
				return h.Actor == "vc-executor" && h.HostID == host && h.IntentVersion == "1.0.0"
			}},
		{formats.NameProdigy, "resume_locks/job-7.lock", "job_id,process_id,hostname,acquired_at",
			func(h formats.Holder) bool { return h.Lock == "job-7" && h.HostID == host }},
		{formats.NameGitClaw, "state/locks/42.lock", "issueNumber,runId,acquiredAt,pid",
			func(h formats.Holder) bool { return h.RequestID == "run-42" }},
	}
	args := []string{"acquire", "job-7", "--request-id", "run-42", "--actor", "vc-executor", "--intent", "epic5",
		"--intent-version", "1.0.0", "--metadata", "issue_number=42", "--metadata", "job_id=job-7", "--pid", strconv.Itoa(self)}
	for _, c := range cases {
		args = append(args, "--file", c.format+":"+filepath.Join(dir, c.path))
	}
	clitest.Must(t, 0, root, args...)
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join(dir, c.path))
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		if got := strings.Join(keysOf(t, c.format, data), ","); got != c.keys {
			t.Errorf("%s fields %s, want %s", c.format, got, c.keys)
		}
		f, _ := formats.Lookup(c.format)
		h, err := f.Parse(data)
		if err != nil || h.PID != self || !c.check(h) {
			t.Errorf("%s: parsed %+v, %v", c.format, h, err)
		}
		if fi, _ := os.Stat(filepath.Join(dir, c.path)); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %o, want 600", c.format, fi.Mode().Perm())
		}
	}
	acq := lastBody(t, root, "lock_acquired")
	if ts, _ := acq["targets"].([]any); len(ts) != len(cases) {
		t.Fatalf("lock_acquired records %v targets, want %d", acq["targets"], len(cases))
	}
	clitest.Must(t, 0, root, "release", "job-7", "--request-id", "run-42")
	for _, c := range cases {
		if _, err := os.Stat(filepath.Join(dir, c.path)); !os.IsNotExist(err) {
			t.Errorf("%s target left after release: %v", c.format, err)
		}
	}
}

func TestForeignFormatFilesFollowTheirOwnRules(t *testing.T) {
	t.Parallel()
	self := os.Getpid()
	host, _ := os.Hostname()
	now := time.Now().UTC()
	dead := deadPID(t)
	render := func(format string, h formats.Holder) []byte {
		f, _ := formats.Lookup(format)
		b, err := f.Render(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type tc struct {
		name   string
		format string
		file   []byte
		code   int    // exit code of a plain acquire
		reason string // lock_stolen reason when taken over
	}
	fresh := func(pid int, hostID string) formats.Holder {
		return formats.Holder{Lock: "j", RequestID: "foreign-1", Actor: "other-tool", Intent: "epic9", IntentVersion: "1",
			HostID: hostID, PID: pid, CreatedAt: now.Add(-time.Minute), HeartbeatAt: now.Add(-time.Minute), TTL: 900 * time.Second,
			Metadata: map[string]string{"issue_number": "7", "job_id": "j"}}
	}
	old := func(pid int, age time.Duration) formats.Holder {
		h := fresh(pid, host)
		h.CreatedAt, h.HeartbeatAt = now.Add(-age), now.Add(-age)
		return h
	}
	cases := []tc{
		{"tower-fleet active", formats.NameTowerFleet, render(formats.NameTowerFleet, fresh(self, host)), 3, ""},
		{"tower-fleet stale heartbeat", formats.NameTowerFleet, render(formats.NameTowerFleet, old(self, time.Hour)), 4, ""},
		{"tower-fleet dead pid here is held while its heartbeat is fresh", formats.NameTowerFleet, render(formats.NameTowerFleet, fresh(dead, host)), 3, ""},
		{"bso live pid", formats.NameBSO, render(formats.NameBSO, fresh(self, host)), 3, ""},
		{"bso dead pid is a zombie", formats.NameBSO, render(formats.NameBSO, fresh(dead, host)), 0, events.ReasonForeignLock},
		{"bso older than 24h", formats.NameBSO, render(formats.NameBSO, old(self, 25*time.Hour)), 4, ""},
		{"bso corrupt yaml is not a lock: refused, kept", formats.NameBSO, []byte("pid: [unclosed\n"), 2, ""},
		{"beads live pid", formats.NameBeads, render(formats.NameBeads, fresh(self, host)), 3, ""},
		{"beads dead pid here", formats.NameBeads, render(formats.NameBeads, fresh(dead, host)), 0, events.ReasonForeignLock},
		{"beads dead pid, hostname in capitals", formats.NameBeads, render(formats.NameBeads, fresh(dead, strings.ToUpper(host))), 0, events.ReasonForeignLock},
		{"beads other host is always valid", formats.NameBeads, render(formats.NameBeads, fresh(dead, "elsewhere")), 3, ""},
		{"beads malformed is not a lock: refused, kept", formats.NameBeads, []byte(`{"holder": "x", "pid": `), 2, ""},
		{"prodigy live pid", formats.NameProdigy, render(formats.NameProdigy, fresh(self, host)), 3, ""},
		{"prodigy dead pid", formats.NameProdigy, render(formats.NameProdigy, fresh(dead, host)), 0, events.ReasonForeignLock},
		{"gitclaw young", formats.NameGitClaw, render(formats.NameGitClaw, old(dead, 2*time.Minute)), 3, ""},
		{"gitclaw older than its ttl", formats.NameGitClaw, render(formats.NameGitClaw, old(self, 11*time.Minute)), 4, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			p := filepath.Join(dir, "foreign.lock")
			if err := os.WriteFile(p, c.file, 0o600); err != nil {
				t.Fatal(err)
			}
			target := c.format + ":" + p
			r := clitest.Run(t, root, "acquire", "j", "--file", target, "--pid", strconv.Itoa(self), "--metadata", "issue_number=7")
			if r.Code != c.code {
				t.Fatalf("acquire over %s: exit %d, want %d\n%s", c.name, r.Code, c.code, r.Stderr)
			}
			if c.code == 0 {
				st := lastBody(t, root, "lock_stolen")
				if st["reason"] != c.reason {
					t.Fatalf("reason %v, want %s", st["reason"], c.reason)
				}
				return
			}
			if got, _ := os.ReadFile(p); string(got) != string(c.file) {
				t.Fatalf("a refused acquire changed the foreign file")
			}
			if c.code == 4 { // stale: --force takes it, recorded as foreign_lock
				clitest.Must(t, 0, root, "acquire", "j", "--file", target, "--force", "--pid", strconv.Itoa(self), "--metadata", "issue_number=7")
				if st := lastBody(t, root, "lock_stolen"); st["reason"] != events.ReasonForeignLock {
					t.Fatalf("forced takeover reason %v", st["reason"])
				}
			}
		})
	}
}

// bsoCheck runs `status --format bso` and returns the return object.
func bsoCheck(t *testing.T, root, file string, extra ...string) formats.BSOStatus {
	t.Helper()
	r := clitest.Must(t, 0, root, append([]string{"status", "sprint", "--format", "bso", "--file", "bso:" + file}, extra...)...)
	var st formats.BSOStatus
	if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil {
		t.Fatalf("bso status: %v\n%s", err, r.Stdout)
	}
	return st
}

func TestBSOFlowsThroughLockledger(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, ".sprint-running")
	self := strconv.Itoa(os.Getpid())
	if st := bsoCheck(t, root, file); st.Status != "clean" || st.LockInfo.Exists {
		t.Fatalf("check with no lock: %+v", st)
	}
	// acquire, as BSO's C1 does at sprint start
	clitest.Must(t, 0, root, "acquire", "sprint", "--file", "bso:"+file, "--request-id", "sprint-2026-02-07-001",
		"--intent", "epic5", "--pid", self)
	st := bsoCheck(t, root, file)
	if st.Status != "blocked" || st.LockInfo.SessionID != "sprint-2026-02-07-001" || st.LockInfo.EpicSpec != "epic5" ||
		!st.LockInfo.PIDAlive || st.LockInfo.IsZombie {
		t.Fatalf("check while running: %+v", st)
	}
	// A second sprint is blocked.
	clitest.Must(t, 3, root, "acquire", "sprint", "--file", "bso:"+file, "--request-id", "sprint-2026-02-07-002", "--intent", "epic6", "--pid", self)
	// Release with the wrong session: refused, also with --force (which
	// then releases only the session it names); BSO's warn-and-release is
	// --force alone, recorded as forced.
	clitest.Must(t, 5, root, "release", "sprint", "--request-id", "sprint-other")
	clitest.Must(t, 5, root, "release", "sprint", "--request-id", "sprint-other", "--force", "--yes", "--reason", "cleanup")
	clitest.Must(t, 0, root, "release", "sprint", "--force", "--yes", "--reason", "cleanup")
	if rel := lastBody(t, root, "lock_released"); rel["forced"] != true || rel["released_request_id"] != "sprint-2026-02-07-001" {
		t.Fatalf("session-mismatch release: %v", rel)
	}
	if st := bsoCheck(t, root, file); st.Status != "clean" {
		t.Fatalf("check after release: %+v", st)
	}

	// Zombie by age: a lock file left 25 hours ago by a process that is still alive.
	old := formats.Holder{RequestID: "sprint-old", Intent: "epic4", PID: os.Getpid(), CreatedAt: time.Now().Add(-25 * time.Hour)}
	old.HeartbeatAt = old.CreatedAt
	data, _ := formats.BSO.Render(old)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if st := bsoCheck(t, root, file); st.Status != "zombie-detected" || !st.LockInfo.IsZombie || st.LockInfo.AgeHours < 24 {
		t.Fatalf("check of a 25 h old lock: %+v", st)
	}
	if st := bsoCheck(t, root, file, "--max-age", "48h"); st.Status != "blocked" {
		t.Fatalf("check with --max-age 48h: %+v", st)
	}
	clitest.Must(t, 4, root, "acquire", "sprint", "--file", "bso:"+file, "--request-id", "sprint-new", "--pid", self)
	clitest.Must(t, 0, root, "acquire", "sprint", "--file", "bso:"+file, "--request-id", "sprint-new", "--force", "--pid", self)
	clitest.Must(t, 0, root, "release", "sprint", "--request-id", "sprint-new")

	// Corrupt file: BSO's check calls it a zombie, but it is not a lock, so
	// lockledger neither overwrites nor removes it: the acquire is refused.
	if err := os.WriteFile(file, []byte("pid: {{{\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := bsoCheck(t, root, file); st.Status != "zombie-detected" || !st.LockInfo.IsZombie {
		t.Fatalf("check of a corrupt lock: %+v", st)
	}
	r := clitest.Must(t, 2, root, "acquire", "sprint", "--file", "bso:"+file, "--request-id", "sprint-after-corrupt", "--pid", self)
	if got, _ := os.ReadFile(file); string(got) != "pid: {{{\n" || !strings.Contains(r.Stderr, file) {
		t.Fatalf("acquire over a corrupt file: file now %q; stderr %s", got, r.Stderr)
	}
	assertChain(t, root)
}

func TestRunSupersedeStopsTheOlderRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	older, lines := startRun(t, root, "issue-42", "--ttl", "60", "--kill-grace", "2s", "--",
		"sh", "-c", `echo started; exec sleep 100`)
	line(t, lines)
	clitest.Must(t, 0, root, "run", "issue-42", "--supersede", "--", "true")
	if code := exitOf(t, older); code != 5 {
		t.Fatalf("superseded runner exit %d, want 5", code)
	}
	if st := lastBody(t, root, "lock_stolen"); st["reason"] != events.ReasonSuperseded {
		t.Fatalf("supersede recorded %v", st["reason"])
	}
	if hf := lastBody(t, root, "heartbeat_failed"); hf["lock_lost"] != true {
		t.Fatalf("older run's loss: %v", hf)
	}
}

func TestRunProjectsTargetsWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	beads := filepath.Join(dir, ".beads", ".exclusive-lock")
	prodigy := filepath.Join(dir, "resume_locks", "mapreduce-123.lock")
	r := clitest.Must(t, 0, root, "run", "mapreduce-123", "--actor", "vc-executor", "--intent-version", "1.0.0",
		"--metadata", "job_id=mapreduce-123", "--file", "beads:"+beads, "--file", "prodigy:"+prodigy, "--",
		"sh", "-c", `cat "$0"; echo; cat "$1"`, beads, prodigy)
	for _, want := range []string{`"holder": "vc-executor"`, `"version": "1.0.0"`, `"job_id": "mapreduce-123"`} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the command did not see %s in its lock files:\n%s", want, r.Stdout)
		}
	}
	for _, p := range []string{beads, prodigy} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after the run: %v", p, err)
		}
	}
}

func TestProjectAndVerifyCoverEveryTargetFormat(t *testing.T) {
	t.Parallel()
	root, dir := t.TempDir(), t.TempDir()
	self := strconv.Itoa(os.Getpid())
	paths := map[string]string{}
	args := []string{"acquire", "job-7", "--request-id", "run-7", "--metadata", "issue_number=7", "--pid", self}
	for _, f := range formats.Names() {
		paths[f] = filepath.Join(dir, f, "lock")
		args = append(args, "--file", f+":"+paths[f])
	}
	clitest.Must(t, 0, root, args...)
	clitest.Must(t, 0, root, "verify")
	for _, f := range formats.Names() {
		t.Run(f, func(t *testing.T) {
			want, err := os.ReadFile(paths[f])
			if err != nil {
				t.Fatal(err)
			}
			// Deleted: verify reports it, project restores the same bytes.
			if err := os.Remove(paths[f]); err != nil {
				t.Fatal(err)
			}
			r := clitest.Must(t, 1, root, "verify")
			if !strings.Contains(r.Stdout+r.Stderr, paths[f]) {
				t.Fatalf("verify does not name the deleted %s target:\n%s%s", f, r.Stdout, r.Stderr)
			}
			clitest.Must(t, 0, root, "project")
			if got, err := os.ReadFile(paths[f]); err != nil || string(got) != string(want) {
				t.Fatalf("project did not restore the %s target: %v\n%s", f, err, got)
			}
			clitest.Must(t, 0, root, "verify")
			// Changed: verify reports it.
			if err := os.WriteFile(paths[f], append([]byte("changed "), want...), 0o600); err != nil {
				t.Fatal(err)
			}
			r = clitest.Must(t, 1, root, "verify")
			if !strings.Contains(r.Stdout+r.Stderr, paths[f]) {
				t.Fatalf("verify does not name the changed %s target:\n%s%s", f, r.Stdout, r.Stderr)
			}
			if err := os.WriteFile(paths[f], want, 0o600); err != nil {
				t.Fatal(err)
			}
			clitest.Must(t, 0, root, "verify")
		})
	}
}
