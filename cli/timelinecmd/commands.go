package timelinecmd

import "github.com/lockledger/lockledger/cli/invocation"

// Commands are this package's commands below the root, each as the root
// lists it and how to build it.
var Commands = []invocation.Command{
	{Listing: historyListing, New: NewHistory},
	{Listing: timelineListing, New: NewTimeline},
	{Listing: whoListing, New: NewWho},
	{Listing: replayListing, New: NewReplay},
}
