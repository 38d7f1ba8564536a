package sqlite

// osPragmas are what this system adds to every connection: nothing on
// Linux, where fsync(2) reaches the disk.
var osPragmas []string
