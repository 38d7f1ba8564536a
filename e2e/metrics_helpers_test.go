package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lockledger/lockledger/internal/clitest"
)

// scrape is one exposition as Prometheus's own parsers read it.
type scrape map[string]*dto.MetricFamily

// parseText reads out with expfmt's TextParser (what node_exporter's
// textfile collector uses); it fails the test on any error.
func parseText(t *testing.T, out string) scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("text format does not parse: %v\n%s", err, out)
	}
	return fams
}

// parseOpenMetrics reads out with expfmt's OpenMetrics 1.0.0 parser.
func parseOpenMetrics(t *testing.T, out string) scrape {
	t.Helper()
	if !strings.HasSuffix(out, "# EOF\n") {
		t.Fatalf("OpenMetrics does not end with # EOF:\n%s", out)
	}
	dec := expfmt.NewDecoder(strings.NewReader(out), expfmt.FmtOpenMetrics_1_0_0)
	fams := scrape{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams
		}
		if err != nil {
			t.Fatalf("OpenMetrics does not parse: %v\n%s", err, out)
		}
		if fams[mf.GetName()] != nil {
			t.Fatalf("OpenMetrics: family %s twice", mf.GetName())
		}
		fams[mf.GetName()] = mf
	}
}

// family is the family name (without a counter's _total, which the two
// parsers name differently).
func (s scrape) family(name string) *dto.MetricFamily {
	if mf := s[name]; mf != nil {
		return mf
	}
	return s[name+"_total"]
}

// metric is the series of name with exactly labels (name, value, ...),
// nil if none; two such series fail the test.
func (s scrape) metric(t *testing.T, name string, labels ...string) *dto.Metric {
	t.Helper()
	mf := s.family(name)
	if mf == nil {
		return nil
	}
	var found *dto.Metric
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if len(got) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if v, ok := got[labels[i]]; !ok || v != labels[i+1] {
				match = false
			}
		}
		if match {
			if found != nil {
				t.Fatalf("%s%v: two series", name, labels)
			}
			found = m
		}
	}
	return found
}

// value is a counter's or gauge's value, 0 for a series that is not there.
func (s scrape) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	m := s.metric(t, name, labels...)
	switch {
	case m == nil:
		return 0
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	t.Fatalf("%s%v is not a counter or gauge", name, labels)
	return 0
}

func (s scrape) histogram(t *testing.T, name string, labels ...string) *dto.Histogram {
	t.Helper()
	m := s.metric(t, name, labels...)
	if m == nil || m.Histogram == nil {
		t.Fatalf("no histogram %s%v", name, labels)
	}
	return m.GetHistogram()
}

// onlyLabel is the value of label name in name's only series with a
// holder (the test's one held lock).
func (s scrape) onlyLabel(t *testing.T, name, label string) string {
	t.Helper()
	ms := s.family(name).GetMetric()
	if len(ms) != 1 {
		t.Fatalf("%s: %d series, want 1", name, len(ms))
	}
	for _, lp := range ms[0].GetLabel() {
		if lp.GetName() == label {
			return lp.GetValue()
		}
	}
	t.Fatalf("%s has no label %s", name, label)
	return ""
}

// listening starts metrics --listen on a free port and returns its URL
// and the running command.
func listening(t *testing.T, root string, args ...string) (string, *runningCmd) {
	t.Helper()
	cmd := clitest.Command(context.Background(), root, append([]string{"metrics", "--listen", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rc := &runningCmd{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		defer close(rc.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			rc.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	for line := range rc.lines {
		var m struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "serving metrics" {
			return "http://" + m.Address + "/metrics", rc
		}
		rc.seen = append(rc.seen, line)
	}
	t.Fatalf("metrics --listen exited without serving: %v", rc.seen)
	return "", nil
}

type runningCmd struct {
	cmd   *exec.Cmd
	lines chan string // its stderr, line by line
	seen  []string
}

func get(t *testing.T, url, accept string) (string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", url, resp.Status, err, b)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// holderOf is the request id of lock's holder in s.
func (s scrape) holderOf(t *testing.T, lock string) string {
	t.Helper()
	for _, m := range s.family("lockledger_lock_holder_info").GetMetric() {
		got := map[string]string{}
		for _, lp := range m.GetLabel() {
			got[lp.GetName()] = lp.GetValue()
		}
		if got["lock"] == lock {
			return got["request_id"]
		}
	}
	t.Fatalf("no holder of %s", lock)
	return ""
}
