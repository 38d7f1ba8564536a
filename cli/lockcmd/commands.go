package lockcmd

import "github.com/lockledger/lockledger/cli/invocation"

// Commands are this package's commands below the root, each as the root
// lists it and how to build it.
var Commands = []invocation.Command{
	{Listing: acquireListing, New: NewAcquire},
	{Listing: heartbeatListing, New: NewHeartbeat},
	{Listing: releaseListing, New: NewRelease},
	{Listing: statusListing, New: NewStatus},
	{Listing: listListing, New: NewList},
	{Listing: stealListing, New: NewSteal},
	{Listing: runListing, New: NewRun},
	{Listing: initListing, New: NewInit},
	{Listing: watchHolderListing, New: NewWatchHolder},
	{Listing: recordLossListing, New: NewRecordLoss},
}
