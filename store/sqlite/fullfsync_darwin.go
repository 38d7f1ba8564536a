package sqlite

// osPragmas are what this system adds to every connection. On macOS
// fsync(2) may leave a commit in the drive's cache: SQLite then syncs with
// F_FULLFSYNC, as os.File.Sync does there (the lock files' journals).
var osPragmas = []string{"fullfsync(ON)", "checkpoint_fullfsync(ON)"}
