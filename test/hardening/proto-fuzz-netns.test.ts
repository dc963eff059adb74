/**
 * Protobuf fuzzing of the mutating calls (UpdateInterface, UpdateRoutes,
 * AddARPNeighbors) against dist/netagent in a fresh netns: mutations of
 * valid requests (proto-requests.ts) are answered OK, INVALID_ARGUMENT or
 * NOT_FOUND, and an invalid request changes nothing (`ip -n NS -json`
 * identical before and after).
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "../../src/ttrpc/codes";
import { encodeFrame, FrameType } from "../../src/ttrpc/frame";
import type { RunningAgent } from "../helpers/agent";
import { pbEncodeRequest } from "../helpers/envelope-pbjs";
import { Netns } from "../helpers/netns";
import { waitFor } from "../helpers/wait";
import { startHardenedAgent } from "./agent";
import { ALLOWED, MAC, type Method, mutate, validRequest } from "./proto-requests";
import { prng, type RawConn, rawConnect } from "./raw";

let tried = 0;

describe("protobuf fuzzing against dist/netagent in a fresh netns", () => {
  let ns: Netns;
  let agent: RunningAgent;
  let conn: RawConn;
  let nextId = 1;

  beforeAll(async () => {
    ns = await Netns.create("nt-pfuzz");
    await ns.veth("eth0", "peer0", { mac: MAC });
    await ns.ip("addr", "add", "10.1.1.2/24", "dev", "eth0");
    await settled();
    agent = await startHardenedAgent({ netns: ns, args: ["--log-level", "error"] });
    conn = await rawConnect(agent.socket);
  });

  afterAll(async () => {
    conn?.destroy();
    await agent?.stop();
    await ns?.remove();
  });

  /**
   * Until IPv6 duplicate address detection ends (after a link comes up), the
   * kernel itself changes link-local addresses and local routes: wait for it.
   */
  async function settled(): Promise<void> {
    await waitFor(async () => !(await ns.ip("-json", "addr", "show")).includes("tentative"), {
      what: "IPv6 DAD to finish",
    });
  }

  /**
   * Links, addresses, routes and neighbours, as ip prints them; of a
   * neighbour only what a call sets (address, link, MAC, permanent or not):
   * the kernel moves the others through REACHABLE/STALE/DELAY by itself.
   */
  async function dump(): Promise<string> {
    const neigh = (json: string) =>
      JSON.stringify(
        (
          JSON.parse(json || "[]") as {
            dst: string;
            dev: string;
            lladdr?: string;
            state?: string[];
          }[]
        ).map((n) => [n.dst, n.dev, n.lladdr, n.state?.includes("PERMANENT") ?? false]),
      );
    return Promise.all([
      ns.ip("-json", "-details", "addr", "show"),
      ns.ip("-json", "-details", "route", "show", "table", "all"),
      ns.ip("-json", "-details", "-6", "route", "show", "table", "all"),
      ns.ip("-json", "neigh", "show").then(neigh),
    ]).then((parts) => parts.join("\n"));
  }

  it("200 mutated UpdateInterface / UpdateRoutes / AddARPNeighbors: invalid ones change nothing", async () => {
    const rand = prng(0xb0f4);
    const counts = { ok: 0, invalid: 0, notFound: 0 };
    let before: string = await dump();
    for (let i = 0; i < 200; i++) {
      const m = (["UpdateInterface", "UpdateRoutes", "AddARPNeighbors"] as const)[i % 3] as Method;
      let p = validRequest(m);
      for (let k = 1 + Math.floor(rand() * 2); k > 0; k--) p = mutate(p, rand);
      const id = nextId;
      nextId += 2;
      conn.write(
        encodeFrame(
          id,
          FrameType.Request,
          0,
          pbEncodeRequest({
            service: "grpc.AgentService",
            method: m,
            payload: p,
            timeoutNano: 5e9,
          }),
        ),
      );
      const a = await conn.answer(id, 30_000);
      const code = a.response?.status?.code ?? 0;
      const msg = a.response?.status?.message ?? "";
      expect(ALLOWED.has(code), `${m} ${Buffer.from(p).toString("hex")}: ${code} ${msg}`).toBe(
        true,
      );
      const after = await dump();
      if (code === Code.OK) {
        counts.ok++;
        await settled();
        before = await dump();
      } else {
        if (code === Code.INVALID_ARGUMENT) counts.invalid++;
        else counts.notFound++;
        expect(after, `${m} answered ${code} "${msg}" yet changed the netns`).toBe(before);
      }
      tried++;
    }
    expect(counts.invalid).toBeGreaterThan(40);
    expect(agent.child.running).toBe(true);
    console.log(
      `protobuf fuzzing in the netns: ${JSON.stringify(counts)}; total ${tried} requests`,
    );
  }, 110_000);
});
