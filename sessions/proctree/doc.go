// Package proctree finds and signals an agent process's whole tree: its
// process group and the tools that left it (a session of their own). It is
// shared by the agent adapters that launch processes. The tree walk is
// Unix only; SetGroup, SignalGroup and ExitStatus also build for Windows.
package proctree
