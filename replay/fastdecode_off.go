//go:build lockledger_nofastdecode

package replay

// fastDecode is false in the bench's comparison build: every body goes
// through encoding/json.
const fastDecode = false
