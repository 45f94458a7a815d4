// Package observe is what every source of terminal sessions (a
// sessions.ExternalSource) shares, whatever agent it watches: the wake-up
// (Wake; Poke, its coalescing send), the watch list (WatchList), the file
// tail (Tailer), what an observer sends (Emitter), the observe loop
// (Relay), the rule stack's shape and its generic rules (Infer,
// ProcessGone, TurnFailed, Waiting, Working, TurnEnded, Idle), and the
// shape of a source that finds its sessions in the process table
// (ProcSource, ProcTable, AgentInfo, NoInbox, Follower, ListProcs) and its
// observe loop (FileObserver, over the Files an agent describes).
//
// An agent's package keeps what only it knows: how to scan its processes,
// how to pair each with its file, how to read that file into a summary,
// and which rules its summary answers. Besides the standard library it
// imports only package sessions and sessions/procscan (the default pid
// probe).
package observe

import "context"

// Notify reports changes in the given directories: a value is sent after
// something in one of them was created, written, renamed or removed (the
// fsnotify adapter in package watch; a directory that does not exist yet is
// watched from its parent until it appears). The channel is closed when ctx
// ends.
type Notify func(ctx context.Context, dirs []string) (<-chan struct{}, error)
