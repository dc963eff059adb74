/**
 * Our own image in front mode, for the tests (`npm run rootfs -- --front
 * STANDIN`): the Go stand-in upstream (test/interop/go/ttrpc-upstream,
 * built static) as the agent behind netagent, started by init before
 * netagent (init.sh runs /etc/init.upstream when it is there), and the
 * kernel parameter that puts netagent in front of it. The stand-in records
 * every call it receives in /run/upstream.log.
 */
import type { Entry } from "./manifest";

export const FRONT_UPSTREAM_BIN = "/usr/bin/ttrpc-upstream";
export const FRONT_UPSTREAM_SOCKET = "/run/upstream.sock";
export const FRONT_UPSTREAM_LOG = "/run/upstream.log";
export const FRONT_HOOK = "/etc/init.upstream";

/** The words boot.json's cmdline gains: netagent's upstream. */
export const FRONT_CMDLINE = [`netagent.upstream=unix://${FRONT_UPSTREAM_SOCKET}`];

/** The image entries front mode adds. */
export function frontEntries(standIn: string): Entry[] {
  return [
    {
      kind: "file",
      path: FRONT_UPSTREAM_BIN,
      mode: 0o755,
      source: standIn,
      origin: "the tests' stand-in upstream (test/interop/go/ttrpc-upstream, static)",
    },
    {
      kind: "text",
      path: FRONT_HOOK,
      mode: 0o755,
      content: `#!/bin/sh\nexec ${FRONT_UPSTREAM_BIN} -socket ${FRONT_UPSTREAM_SOCKET} -log ${FRONT_UPSTREAM_LOG} -name guest-upstream\n`,
      origin: "rootfs/front.ts",
    },
  ];
}
