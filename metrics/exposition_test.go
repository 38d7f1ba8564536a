package metrics

import (
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func parse(t *testing.T, format Format, out string) (map[string]*dto.MetricFamily, error) {
	t.Helper()
	if format == Text {
		p := expfmt.NewTextParser(model.UTF8Validation)
		return p.TextToMetricFamilies(strings.NewReader(out))
	}
	dec := expfmt.NewDecoder(strings.NewReader(out), expfmt.FmtOpenMetrics_1_0_0)
	fams := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams, nil
		}
		if err != nil {
			return nil, err
		}
		fams[mf.GetName()] = mf
	}
}

// TestLabelValuesRoundTrip: label values holding what the exposition
// formats must escape (quotes, backslashes, line feeds) and what they
// need not (a brace, a comma, "} 1", a tab, non-ASCII) come back exactly
// from Prometheus's parsers, in both formats; so do counters, gauges
// and histograms with their types.
func TestLabelValuesRoundTrip(t *testing.T) {
	values := []string{`plain`, `say "hi"`, `C:\new\table`, "two\nlines", `\"`, `x"} 1` + "\n" + `lockledger_forged 1`, "tab\there", "ünï ☃", `trailing\`, ``}
	for _, format := range []Format{Text, OpenMetrics} {
		const help = `Things "counted", with a \ backslash` + "\nand a line feed."
		c := newFamily("lockledger_things", typeCounter, "", help)
		g := newFamily("lockledger_level", typeGauge, "", "A level.")
		h := newFamily("lockledger_wait_seconds", typeHistogram, "seconds", "Waits.")
		for i, v := range values {
			c.add("_total", float64(i+1), "name", v)
			g.add("", 0.25, "name", v)
			hist := newHistogram([]float64{1, 10})
			hist.observe(0.5)
			hist.observe(5)
			hist.observe(50)
			h.addHistogram(&hist, "name", v)
		}
		var b strings.Builder
		if err := Write(&b, format, []Family{c, g, h}); err != nil {
			t.Fatal(err)
		}
		fams, err := parse(t, format, b.String())
		if err != nil {
			t.Fatalf("format %d does not parse: %v\n%s", format, err, b.String())
		}
		counter := fams["lockledger_things_total"] // both parsers name a counter by its samples
		if counter.GetType() != dto.MetricType_COUNTER || len(counter.GetMetric()) != len(values) {
			t.Fatalf("format %d: counter %v", format, counter)
		}
		if counter.GetHelp() != help {
			t.Errorf("format %d: help %q came back as %q", format, help, counter.GetHelp())
		}
		for i, m := range counter.GetMetric() {
			if got := m.GetLabel()[0].GetValue(); got != values[i] {
				t.Errorf("format %d: label %q came back as %q", format, values[i], got)
			}
			if m.GetCounter().GetValue() != float64(i+1) {
				t.Errorf("format %d: %q = %v, want %d", format, values[i], m.GetCounter().GetValue(), i+1)
			}
		}
		if gf := fams["lockledger_level"]; gf.GetType() != dto.MetricType_GAUGE || gf.GetMetric()[0].GetGauge().GetValue() != 0.25 {
			t.Errorf("format %d: gauge %v", format, gf)
		}
		hf := fams["lockledger_wait_seconds"]
		if hf.GetType() != dto.MetricType_HISTOGRAM || len(hf.GetMetric()) != len(values) {
			t.Fatalf("format %d: histogram %v", format, hf)
		}
		hm := hf.GetMetric()[1].GetHistogram()
		var cum []uint64
		for _, bk := range hm.GetBucket() {
			if !math.IsInf(bk.GetUpperBound(), 1) {
				cum = append(cum, bk.GetCumulativeCount())
			}
		}
		if hm.GetSampleCount() != 3 || hm.GetSampleSum() != 55.5 || len(cum) != 2 || cum[0] != 1 || cum[1] != 2 {
			t.Errorf("format %d: histogram %v, want 3 observations summing 55.5, buckets 1 and 2", format, hm)
		}
	}
}

// TestParsersAreStrict: the parsers the tests rely on refuse what the
// other format names differently, and an unescaped quote; a test that
// parses is a test that could fail.
func TestParsersAreStrict(t *testing.T) {
	c := newFamily("lockledger_things", typeCounter, "", "Things.")
	c.add("_total", 1)
	var text, om strings.Builder
	if err := Write(&text, Text, []Family{c}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&om, OpenMetrics, []Family{c}); err != nil {
		t.Fatal(err)
	}
	if _, err := parse(t, OpenMetrics, text.String()+"# EOF\n"); err == nil {
		t.Errorf("the OpenMetrics parser reads a counter named as the text format names it:\n%s", text.String())
	}
	if _, err := parse(t, OpenMetrics, strings.TrimSuffix(om.String(), "# EOF\n")); err == nil {
		t.Errorf("the OpenMetrics parser reads an exposition without # EOF")
	}
	bad := "# TYPE lockledger_x gauge\nlockledger_x{a=\"b\"c\"} 1\n"
	if _, err := parse(t, Text, bad); err == nil {
		t.Errorf("the text parser reads an unescaped quote")
	}
	if _, err := parse(t, OpenMetrics, bad+"# EOF\n"); err == nil {
		t.Errorf("the OpenMetrics parser reads an unescaped quote")
	}
}

func TestHistogramBuckets(t *testing.T) {
	h := newHistogram([]float64{1, 5})
	for _, v := range []float64{-3, 0, 1, 1.5, 5, 6, math.NaN()} {
		h.observe(v)
	}
	var f Family
	f.addHistogram(&h, "lock", "a")
	want := []Sample{
		{"_bucket", []string{"lock", "a", "le", "1"}, 4}, {"_bucket", []string{"lock", "a", "le", "5"}, 6},
		{"_bucket", []string{"lock", "a", "le", "+Inf"}, 7}, {"_sum", []string{"lock", "a"}, 13.5}, {"_count", []string{"lock", "a"}, 7},
	}
	if !reflect.DeepEqual(f.Samples, want) {
		t.Fatalf("samples %v, want the cumulative buckets %v", f.Samples, want)
	}
	if h.Count != 7 || h.Sum != 13.5 {
		t.Errorf("count %d sum %v, want 7 and 13.5 (negative and NaN count as 0)", h.Count, h.Sum)
	}
}
