//go:build lockledger_noreadahead

package replay

// readAheadOn is false in the bench's comparison build: the rows are read
// and folded on one goroutine.
const readAheadOn = false
