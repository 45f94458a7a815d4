// Package proctree starts, signals and stops an agent process with its
// whole tree: its process group and the tools that left it (a session of
// their own), how it ended, and the reaping of one an earlier run of the
// app lost. It is shared by the agent adapters that launch processes. The
// tree is Unix only; on Windows a process is started in a group of its own
// and killed.
package proctree
