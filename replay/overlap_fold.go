package replay

// KeepOverlaps makes the fold keep every overlap its State finds, as
// Overlaps does over a whole log: a reader of a window of the log (an
// evidence bundle) states them for that window.
func (f *HoldingFold) KeepOverlaps() { f.st.keepOverlaps = true }

// Overlaps are the overlaps found so far (with KeepOverlaps), in seq order.
func (f *HoldingFold) Overlaps() []Overlap { return f.st.overlaps }
