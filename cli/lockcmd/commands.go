package lockcmd

import "github.com/lockledger/lockledger/cli/invocation"

// Commands are this package's commands below the root, each as the root
// lists it and how to build it; each is a short run of sequential work.
var Commands = []invocation.Command{
	{Listing: acquireListing, New: NewAcquire, Sequential: true},
	{Listing: heartbeatListing, New: NewHeartbeat, Sequential: true},
	{Listing: releaseListing, New: NewRelease, Sequential: true},
	{Listing: statusListing, New: NewStatus, Sequential: true},
	{Listing: listListing, New: NewList, Sequential: true},
	{Listing: stealListing, New: NewSteal, Sequential: true},
	{Listing: runListing, New: NewRun, Sequential: true},
	{Listing: initListing, New: NewInit, Sequential: true},
	{Listing: watchHolderListing, New: NewWatchHolder, Sequential: true},
	{Listing: recordLossListing, New: NewRecordLoss, Sequential: true},
}
