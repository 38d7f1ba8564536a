package metrics

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// Format is an exposition format.
type Format int

const (
	// Text is the Prometheus text format 0.0.4: what node_exporter's
	// textfile collector reads.
	Text Format = iota
	// OpenMetrics is OpenMetrics 1.0.0 text.
	OpenMetrics
)

// ContentType is the format's HTTP content type.
func (f Format) ContentType() string {
	if f == OpenMetrics {
		return "application/openmetrics-text; version=1.0.0; charset=utf-8"
	}
	return "text/plain; version=0.0.4; charset=utf-8"
}

type metricType string

const (
	typeGauge     metricType = "gauge"
	typeCounter   metricType = "counter"
	typeHistogram metricType = "histogram"
)

// Family is one metric family: its samples share a name, a type and a
// help text.
type Family struct {
	Name    string // without the _total of a counter's samples
	Type    metricType
	Unit    string
	Help    string
	Samples []Sample
}

// Sample is one line: the family's name and Suffix, labels, a value.
type Sample struct {
	Suffix string   // "", _total, _bucket, _sum, _count
	Labels []string // name, value, name, value, ...
	Value  float64
}

func newFamily(name string, t metricType, unit, help string) Family {
	return Family{Name: name, Type: t, Unit: unit, Help: help}
}

func (f *Family) add(suffix string, v float64, labels ...string) {
	f.Samples = append(f.Samples, Sample{Suffix: suffix, Labels: labels, Value: v})
}

func (f *Family) addHistogram(h *histogram, labels ...string) {
	var n uint64
	for i, c := range h.Counts {
		n += c
		le := math.Inf(1)
		if i < len(h.bounds) {
			le = h.bounds[i]
		}
		f.add("_bucket", float64(n), append(labels[:len(labels):len(labels)], "le", formatFloat(le))...)
	}
	f.add("_sum", h.Sum, labels...)
	f.add("_count", float64(h.Count), labels...)
}

// Write writes fams in format: HELP and TYPE (and UNIT in OpenMetrics)
// before each family's samples, label values escaped (backslash, double
// quote and line feed), and OpenMetrics' closing # EOF.
func Write(w io.Writer, format Format, fams []Family) error {
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		// The text format names a counter as its samples (_total);
		// OpenMetrics names the family, its samples add _total.
		desc := f.Name
		if format == Text && f.Type == typeCounter {
			desc += "_total"
		}
		bw.WriteString("# HELP " + desc + " " + escapeHelp(f.Help, format) + "\n")
		bw.WriteString("# TYPE " + desc + " " + string(f.Type) + "\n")
		if format == OpenMetrics && f.Unit != "" {
			bw.WriteString("# UNIT " + desc + " " + f.Unit + "\n")
		}
		for _, s := range f.Samples {
			bw.WriteString(f.Name + s.Suffix)
			if len(s.Labels) > 0 {
				bw.WriteByte('{')
				for i := 0; i+1 < len(s.Labels); i += 2 {
					if i > 0 {
						bw.WriteByte(',')
					}
					bw.WriteString(s.Labels[i] + `="` + escapeLabel(s.Labels[i+1]) + `"`)
				}
				bw.WriteByte('}')
			}
			bw.WriteString(" " + formatFloat(s.Value) + "\n")
		}
	}
	if format == OpenMetrics {
		bw.WriteString("# EOF\n")
	}
	return bw.Flush()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escapeLabel escapes a label value as both formats require: backslash,
// double quote and line feed.
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// escapeHelp escapes a help text: backslash and line feed, and in
// OpenMetrics the double quote too.
func escapeHelp(s string, format Format) string {
	if format == OpenMetrics {
		return labelEscaper.Replace(s)
	}
	return helpEscaper.Replace(s)
}

// formatFloat writes v as both formats read it: integers without an
// exponent, +Inf for the last bucket.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
