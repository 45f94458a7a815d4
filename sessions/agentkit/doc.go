// Package agentkit is what every agent adapter under sessions/ shares that
// is not its protocol:
//
//   - Info: an agent's names for the registry and finding its command (the
//     error names the setting);
//   - Agent and Adapter: the registry entry (sessions.ManagedAgent and
//     sessions.OrphanReaper) made from an adapter's Info, start and reaper;
//   - Start and Child: its process in a group of its own, stdin with a write
//     deadline, the stderr tail, how it ended;
//   - Pipe, Options and Pump: an agent driven over stdin and stdout around
//     its decoder (its events, counters, request ids, the decode loop),
//     and the Gate a prompt waits at until the conversation is open;
//   - Liveness: whether that process still runs (pid and start stamp, through
//     procscan.Probe), for the runtime's probe at every tick;
//   - LineReader and Counters: bounded line framing of its stdout, and
//     LineDecoder, a line protocol's decoder but for what a line means;
//   - the small helpers protocol decoders use (UnmarshalLine and
//     Frame.Unmarshal, Clip, RPCID, Remember, One), and the request side's
//     (JSONLine, a line for the agent's stdin; RawRPCID, a kept id as JSON).
//
// An adapter keeps only its protocol: the arguments, the requests it writes
// and the decoding of each line into sessions.Events.
package agentkit
