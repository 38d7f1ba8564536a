package formats

import (
	"errors"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/lockledger/lockledger/internal/proc"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// probes, as kill(pid, 0) would answer them.
func probeErr(err error) func(int) proc.Liveness {
	return func(int) proc.Liveness { return proc.LivenessOf(err) }
}

var (
	probeAlive   = probeErr(nil)
	probeEPERM   = probeErr(syscall.EPERM)
	probeGone    = probeErr(syscall.ESRCH)
	probeUnknown = probeErr(syscall.EINVAL)
)

// probeMustNot fails the test if the pid is probed at all.
func probeMustNot(t *testing.T) func(int) proc.Liveness {
	return func(pid int) proc.Liveness {
		t.Helper()
		t.Errorf("pid %d was probed; this holder must not be judged by pid", pid)
		return proc.Gone
	}
}

// judgeCase is one row of a Judge table.
type judgeCase struct {
	name     string
	h        Holder
	parseErr error
	now      time.Time
	env      Env
	state    string
	reason   string
	failSafe bool
	zombie   bool
}

func runJudge(t *testing.T, f Format, cases []judgeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := f.Judge(c.h, c.parseErr, c.now, c.env)
			if v.State != c.state || v.Reason != c.reason || v.FailSafe != c.failSafe || v.Zombie != c.zombie {
				t.Errorf("%s.Judge = {State:%q Reason:%q FailSafe:%v Zombie:%v} (%s), want {State:%q Reason:%q FailSafe:%v Zombie:%v}",
					f.Name(), v.State, v.Reason, v.FailSafe, v.Zombie, v.Detail, c.state, c.reason, c.failSafe, c.zombie)
			}
			if v.Detail == "" {
				t.Errorf("%s.Judge gave no Detail", f.Name())
			}
		})
	}
}

// malformedOf parses data that must be malformed and returns the error.
func malformedOf(t *testing.T, f Format, data string) error {
	t.Helper()
	_, err := f.Parse([]byte(data))
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("%s.Parse(%q) error = %v, want ErrMalformed", f.Name(), data, err)
	}
	return err
}

func checkGolden(t *testing.T, f Format, h Holder, want string) {
	t.Helper()
	got, err := f.Render(h)
	if err != nil {
		t.Fatalf("%s.Render: %v", f.Name(), err)
	}
	if string(got) != want {
		t.Errorf("%s.Render =\n%q\nwant\n%q", f.Name(), got, want)
	}
}

func checkRoundTrip(t *testing.T, f Format, h, want Holder) {
	t.Helper()
	b, err := f.Render(h)
	if err != nil {
		t.Fatalf("%s.Render: %v", f.Name(), err)
	}
	got, err := f.Parse(b)
	if err != nil {
		t.Fatalf("%s.Parse(Render(h)): %v\n%s", f.Name(), err, b)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s.Parse(Render(h)) =\n%+v\nwant\n%+v\nfile:\n%s", f.Name(), got, want, b)
	}
	again, err := f.Render(got)
	if err != nil {
		t.Fatalf("%s.Render(Parse(Render(h))): %v", f.Name(), err)
	}
	if string(again) != string(b) {
		t.Errorf("%s: rendering the parsed holder changed the file:\n%s\nthen\n%s", f.Name(), b, again)
	}
}

// fuzzParse is the body of every FuzzParse target: Parse never panics,
// failures wrap ErrMalformed, Judge accepts whatever Parse gave, and a
// parsed holder that renders is a fixed point of Render∘Parse.
func fuzzParse(t *testing.T, f Format, data []byte) {
	h, err := f.Parse(data)
	env := Env{HostID: "tower-01", Probe: probeGone}
	now := utc("2026-02-08T00:00:00Z")
	v := f.Judge(h, err, now, env)
	switch v.State {
	case "held", "stale", "dead":
	default:
		t.Fatalf("Judge state %q", v.State)
	}
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("Parse error %v does not wrap ErrMalformed", err)
		}
		return
	}
	b, rerr := f.Render(h)
	if rerr != nil {
		return // a foreign file may hold what this format cannot write back (e.g. pid 0)
	}
	h2, err := f.Parse(b)
	if err != nil {
		t.Fatalf("Parse(Render(Parse(data))) failed: %v\n%q", err, b)
	}
	b2, err := f.Render(h2)
	if err != nil || string(b2) != string(b) {
		t.Fatalf("Render is not stable: %v\n%q\n%q", err, b, b2)
	}
}
