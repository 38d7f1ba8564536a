package auditcmd

import "github.com/lockledger/lockledger/cli/invocation"

// Commands are this package's commands below the root, each as the root
// lists it and how to build it.
var Commands = []invocation.Command{
	{Listing: verifyListing, New: NewVerify},
	{Listing: exportListing, New: NewExport},
	{Listing: evidenceListing, New: NewEvidence},
	{Listing: projectListing, New: NewProject},
	{Listing: keygenListing, New: NewKeygen},
	{Listing: checkpointListing, New: NewCheckpoint},
	{Listing: proveListing, New: NewProve},
	{Listing: verifyProofListing, New: NewVerifyProof},
	{Listing: importListing, New: NewImport},
	{Listing: trustListing, New: NewTrust},
	{Listing: archiveListing, New: NewArchive},
	{Listing: pruneListing, New: NewPrune},
	{Listing: unpruneListing, New: NewUnprune},
	{Listing: metricsListing, New: NewMetrics},
	{Listing: signerListing, New: NewSigner},
}
