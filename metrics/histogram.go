package metrics

import (
	"fmt"
)

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
	Counts []uint64 `json:"counts"` // one per bound, then +Inf
	Sum    float64  `json:"sum"`
	Count  uint64   `json:"count"`
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
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
	h.Counts[i]++
	h.Count++
	h.Sum += v
}

// restore gives a histogram read from a state file its bounds.
func (h *histogram) restore(bounds []float64) error {
	if len(h.Counts) != len(bounds)+1 {
		return fmt.Errorf("a histogram of %d buckets, not %d", len(h.Counts), len(bounds)+1)
	}
	h.bounds = bounds
	return nil
}
