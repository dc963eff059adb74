/**
 * Which part of src/ may import which: the rules, written once, checked by
 * `npm run deps` (test/run.sh runs it; any violation fails the run).
 *
 * The parts, lowest first (a part imports only parts before it, which
 * leaves no loop between folders):
 *   gen, process            generated protobuf code; starting child processes
 *   ttrpc                   the protocol core, no I/O
 *   transport               sockets and serial ports
 *   net                     the guest network: model, iproute2, planners
 *   wire                    model <-> protobuf mappings
 *   common                  what agent, front and host share (log, limits, statuses)
 *   client                  the typed client of an agent
 *   front                   front mode's forwarding
 *   agent                   the guest agent
 *   host                    netagentctl (only its entry, host/cli.ts, is imported by nobody in src)
 *
 * TypeScript is read by swc (typescript 7 has no JS API for the cruiser);
 * type-only imports count like any other.
 */

/** A rule that `part` imports nothing of `parts`. */
function never(part, parts, comment) {
  return {
    name: `${part}-not-${parts.join("-")}`,
    comment,
    severity: "error",
    from: { path: `^src/${part}/` },
    to: { path: `^src/(${parts.join("|")})/` },
  };
}

module.exports = {
  forbidden: [
    never(
      "net",
      ["agent", "host", "ttrpc", "wire", "transport", "front", "common", "client"],
      "net speaks the model and iproute2; protocols and programs are built on it, not in it",
    ),
    never(
      "ttrpc",
      ["wire", "net", "agent", "transport", "front", "common", "client", "host", "process"],
      "the protocol core is I/O-free and knows no message but its own envelope",
    ),
    never(
      "front",
      ["agent", "host", "client"],
      "front mode forwards bytes; the agent builds on it, not the other way",
    ),
    never("process", [
      "ttrpc",
      "transport",
      "net",
      "wire",
      "common",
      "client",
      "front",
      "agent",
      "host",
    ]),
    never("transport", ["net", "wire", "common", "client", "front", "agent", "host", "process"]),
    never("wire", ["transport", "common", "client", "front", "agent", "host", "process"]),
    never("common", ["transport", "wire", "client", "front", "agent", "host"]),
    never("client", ["net", "common", "front", "agent", "host", "process"]),
    never("agent", ["host", "client"]),
    {
      name: "host-only-from-cli",
      comment: "netagentctl is a program: nothing in src imports it (its entry is host/cli.ts)",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/host/" },
      to: { path: "^src/host/" },
    },
    {
      name: "no-circular",
      comment: "no module imports itself through others (type-only imports count)",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    parser: "swc",
    tsPreCompilationDeps: false,
    doNotFollow: { path: ["node_modules", "^src/gen/"] },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".json"] },
  },
};
