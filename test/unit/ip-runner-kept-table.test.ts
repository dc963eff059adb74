/**
 * IpRunner.readLinksAndRoutes keeps the table it parsed, with its text,
 * for the next read to recognise (routes-memo.ts knows a repeat by it),
 * and only up to KEPT_TABLE_MAX_ROUTES routes. The `ip` here is a script
 * printing a fixed listing: no root, no netns.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { IpRunner, KEPT_TABLE_MAX_ROUTES } from "../../src/net/iproute/ip-runner";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An ip that answers any batch with one link and `routes` main-table routes. */
function listingIp(routes: number): string {
  const dir = mkdtempSync(join(tmpdir(), "netagent-kept-"));
  dirs.push(dir);
  const links = [
    {
      ifindex: 2,
      ifname: "eth0",
      flags: ["UP"],
      mtu: 1500,
      address: "02:00:00:00:00:01",
      addr_info: [],
    },
  ];
  const table = Array.from({ length: routes }, (_, i) => ({
    dst: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    gateway: "10.255.0.1",
    dev: "eth0",
    flags: [],
  }));
  writeFileSync(join(dir, "out"), `${JSON.stringify(links)}\n${JSON.stringify(table)}\n`);
  const bin = join(dir, "ip");
  writeFileSync(bin, `#!/bin/sh\ncat > /dev/null\nexec cat '${join(dir, "out")}'\n`);
  chmodSync(bin, 0o755);
  return bin;
}

describe("IpRunner.readLinksAndRoutes: the kept table", () => {
  it("gives the same parsed table back for the same text, at the bound", async () => {
    const ip = new IpRunner({ binary: listingIp(KEPT_TABLE_MAX_ROUTES) });
    const a = await ip.readLinksAndRoutes();
    const b = await ip.readLinksAndRoutes();
    expect(a.routes).toHaveLength(KEPT_TABLE_MAX_ROUTES);
    expect(b.routes).toBe(a.routes);
    expect(b.links).toBe(a.links);
  });

  it("keeps no table over the bound: each read is parsed afresh", async () => {
    const ip = new IpRunner({ binary: listingIp(KEPT_TABLE_MAX_ROUTES + 1) });
    const a = await ip.readLinksAndRoutes();
    const b = await ip.readLinksAndRoutes();
    expect(a.routes).toHaveLength(KEPT_TABLE_MAX_ROUTES + 1);
    expect(b.routes).not.toBe(a.routes);
    expect(b.routes).toEqual(a.routes);
  });
});
