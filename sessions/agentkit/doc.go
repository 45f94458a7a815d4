// Package agentkit is what every agent adapter under sessions/ shares that
// is not its protocol: starting the agent's process (its own group, stdin
// with a write deadline, the stderr tail, how it ended), reading its stream
// as bounded lines with counters, and telling whether the process still
// runs. An adapter keeps only its protocol: the arguments, the requests it
// writes and the decoding of each line into sessions.Events.
package agentkit
