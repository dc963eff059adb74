import pkg from "../../package.json" with { type: "json" };

/** The agent's version, from package.json (reported by Health/Version). */
export const AGENT_VERSION: string = pkg.version;
/** The agent API version, as the Kata agent reports it in grpc_version. */
export const API_VERSION = "0.0.1";
