/** Our image in front mode (rootfs/front.ts): what it adds, and that init.sh runs it first. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  FRONT_CMDLINE,
  FRONT_HOOK,
  FRONT_UPSTREAM_BIN,
  FRONT_UPSTREAM_SOCKET,
  frontEntries,
} from "../../rootfs/front";
import { parseArgs } from "../../src/agent/config/config";

describe("rootfs --front", () => {
  it("adds the stand-in and the hook that starts it on the socket netagent is told", () => {
    const [bin, hook] = frontEntries("/host/ttrpc-upstream-static");
    expect(bin).toMatchObject({ kind: "file", path: FRONT_UPSTREAM_BIN, mode: 0o755 });
    expect(hook).toMatchObject({ kind: "text", path: FRONT_HOOK, mode: 0o755 });
    const content = hook?.kind === "text" ? hook.content : "";
    expect(content).toMatch(
      new RegExp(`^#!/bin/sh\\nexec ${FRONT_UPSTREAM_BIN} -socket ${FRONT_UPSTREAM_SOCKET} `),
    );
    // The kernel parameter puts the image's netagent in front of that socket.
    const parsed = parseArgs([], FRONT_CMDLINE.join(" "));
    expect(parsed.kind === "run" && parsed.config.upstream?.text).toBe(
      `unix://${FRONT_UPSTREAM_SOCKET}`,
    );
  });

  it("init.sh starts the hook before netagent", () => {
    const init = readFileSync("rootfs/init.sh", "utf8");
    const hook = init.indexOf(`if [ -x ${FRONT_HOOK} ]; then`);
    expect(hook).toBeGreaterThan(0);
    expect(hook).toBeLessThan(init.indexOf("supervise_agent &"));
  });
});
