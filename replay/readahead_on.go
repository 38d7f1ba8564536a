//go:build !lockledger_noreadahead

package replay

// readAheadOn says whether readAhead reads on a goroutine of its own. The
// bench builds a second binary with the tag lockledger_noreadahead to
// measure the commands without it in the same run.
const readAheadOn = true
