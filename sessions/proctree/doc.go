// Package proctree finds and signals an agent process's whole tree: its
// process group and the tools that left it (a session of their own). It is
// shared by the agent adapters that launch processes; Unix only.
package proctree
