package jepsen

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Quantile is the q-quantile (nearest rank) of ds, or 0 when empty.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

// WriteTable writes the results as one Markdown table, a row per store and
// fault class.
func WriteTable(w io.Writer, results []*Result) {
	fmt.Fprintln(w, "| store | fault | trials | take-over trials | jobs | overlaps | max overlap ms | loss-to-stop p50/p99/max ms | fencing violations | history disagreements | porcupine | stuck | fenced writes accepted | rejected | stale accepted | rejections missing from the ledger | time |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		if r.NA != "" {
			fmt.Fprintf(w, "| %s | %s | N/A: %s | | | | | | | | | | | | | | |\n", r.Store, r.Fault, r.NA)
			continue
		}
		loss := "-"
		if len(r.Loss) > 0 {
			loss = fmt.Sprintf("%s / %s / %s", ms(Quantile(r.Loss, 0.5)), ms(Quantile(r.Loss, 0.99)), ms(Quantile(r.Loss, 1)))
		}
		fenced := "- | - | - | -"
		if r.Fenced {
			fenced = fmt.Sprintf("%d | %d | %d | %d", r.FencedAccepted, r.FencedRejected, r.StaleAccepted, r.RejectionsMissing)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %s | %s | %d | %d | %s | %d | %s | %s |\n",
			r.Store, r.Fault, r.Trials, r.TakeOvers, r.Jobs, r.Overlaps, ms(r.MaxOverlap), loss,
			r.FencingViolations, r.Disagreements, r.Porcupine(), r.Stuck, fenced, r.Elapsed.Round(time.Second))
	}
}

// AcquireSummary says where the kill-acquire class's kills landed, and the
// times that aimed them (p50/max over the trials).
func (r *Result) AcquireSummary() string {
	a := r.Acquire
	pm := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		return ms(Quantile(ds, 0.5)) + "/" + ms(Quantile(ds, 1))
	}
	return fmt.Sprintf("%s %s: kills %d before the acquire was recorded, %d after it was recorded and before the job started, %d after the job started; launch to acquire event %s ms, to job start %s ms, to kill %s ms (p50/max)",
		r.Store, r.Fault, a.BeforeCommit, a.Committed, a.AfterStart, pm(a.ToAcquire), pm(a.ToStart), pm(a.KillAt))
}
