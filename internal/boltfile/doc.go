// Package boltfile opens a service's bbolt database file and proves it
// sound before anyone uses it. It is written once here for every syncpod
// service that keeps a bbolt file (the planner's desired pods, the
// executor's crash-loop back-off); each of them keeps its own bucket tree
// and migrations, and says in Options what losing its file costs. Schema
// is the one way a database records its schema version (decimal ASCII
// under a meta key) and runs its ordered migrations in the opening
// transaction, refusing a file newer than the program (ErrSchemaTooNew).
//
// # Promises
//
//   - A missing file is created complete: it is initialised under a
//     temporary name in the same directory, synced and hard-linked into
//     place, so an existing file that is empty was damaged, never
//     half-created by this package. No temporary file is left behind.
//   - Open never panics on a bad file. bbolt panics (or faults on pages past
//     the end of a truncated file) on some corruptions: those, a file whose
//     pages reach past its end and whatever bbolt's own consistency check
//     (tx.Check) finds are an error wrapping ErrCorrupt. The file is let go
//     again (closed and unlocked), so a second Open fails the same way.
//   - A file another process (or this one) holds past Options.Timeout is an
//     error wrapping ErrLocked that names the holder's pid when /proc/locks
//     tells it.
//   - Every error names the file and says what to do: the service's own
//     advice for a damaged file, and for what an operator fixes on the host
//     (permissions, a read-only mount, a full disk) the host's error (an
//     errno, kept for errors.Is) with a hint.
//   - The file is opened with mode 0600.
package boltfile
