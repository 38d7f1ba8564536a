package metrics

import "math"

// The histograms' upper bounds, in seconds: from a lock held for a quick
// step to one held for a day, and from a short wait to one of hours.
var (
	holdBuckets = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600, 86400}
	waitBuckets = []float64{0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
)

// histogram counts observations per bucket (not cumulative: the
// exposition adds them up) and their sum.
type histogram struct {
	bounds []float64
	counts []uint64 // one per bound, then +Inf
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// observe adds one observation of v seconds; a negative or NaN one (clocks
// that disagree) counts as 0.
func (h *histogram) observe(v float64) {
	if !(v > 0) {
		v = 0
	}
	i := len(h.bounds)
	for j, b := range h.bounds {
		if v <= b {
			i = j
			break
		}
	}
	h.counts[i]++
	h.count++
	h.sum += v
}

// buckets are the cumulative counts per upper bound, +Inf last.
func (h *histogram) buckets() []bucket {
	out := make([]bucket, 0, len(h.counts))
	var n uint64
	for i, c := range h.counts {
		n += c
		le := math.Inf(1)
		if i < len(h.bounds) {
			le = h.bounds[i]
		}
		out = append(out, bucket{le: le, count: n})
	}
	return out
}

type bucket struct {
	le    float64
	count uint64
}
