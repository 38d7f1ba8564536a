//go:build !lockledger_nofastdecode

package replay

// fastDecode says whether decodeFastString is tried before encoding/json. The
// bench builds a second binary with the tag lockledger_nofastdecode to
// measure the commands without it in the same run.
const fastDecode = true
