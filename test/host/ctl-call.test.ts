/**
 * `netagentctl call` against dist/netagent in a fresh netns: it knows every
 * service the agent serves (the agent's own list, src/agent/server/services.ts;
 * `call netagent.v1.Network Get` was "unknown method"), the running agent
 * serves exactly that list, and netagentctl's own multi-line message prints
 * as lines while the user's words in it stay escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVED_SERVICES } from "../../src/agent/server/services";
import { AgentClient } from "../../src/client/client";
import { Code, TtrpcError } from "../../src/ttrpc/codes";
import { randomMac } from "../helpers/netns";
import { ctl, Guest } from "./helpers";

const MAC = randomMac();
let guest: Guest;

beforeAll(async () => {
  guest = await Guest.create(MAC);
});

afterAll(async () => {
  await guest?.remove();
});

interface IpLink {
  ifname: string;
  address: string;
  mtu: number;
}

describe("call knows every service the agent serves", () => {
  it("call netagent.v1.Network Get: the guest's state as protobuf JSON, as ip reads it", async () => {
    const r = await ctl(["--addr", guest.addr, "call", "netagent.v1.Network", "Get"]);
    expect(r.code, r.stderr).toBe(0);
    const state = JSON.parse(r.stdout) as {
      interfaces: { name: string; mac: string; mtu: number }[];
      rules: { priority?: number; family: number }[];
    };
    const links = (await guest.ns.json<IpLink[]>("link", "show")).filter((l) => l.ifname !== "lo");
    expect(links.map((l) => l.ifname).sort()).toEqual(["gst0"]);
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    expect(state.interfaces.map(({ name, mac, mtu }) => ({ name, mac, mtu })).sort(byName)).toEqual(
      links.map((l) => ({ name: l.ifname, mac: l.address, mtu: l.mtu })).sort(byName),
    );
    const rules = await guest.ns.json<{ priority: number }[]>("rule", "show");
    expect(
      state.rules
        .filter((x) => x.family === 4)
        .map((x) => x.priority ?? 0)
        .sort((a, b) => a - b),
    ).toEqual(rules.map((x) => x.priority).sort((a, b) => a - b));
  });

  it.each([
    ["grpc.Health", "Check"],
    ["grpc.AgentService", "ListInterfaces"],
  ])("call %s %s answers", async (service, method) => {
    const r = await ctl(["--addr", guest.addr, "call", service, method]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toBeTypeOf("object");
  });

  it("the running agent serves exactly the services netagentctl knows", async () => {
    const c = await AgentClient.connect(guest.addr);
    const status = (service: string, method: string) =>
      c.raw(service, method, new Uint8Array()).then(
        () => "answered",
        (err: unknown) => (err instanceof TtrpcError ? `${err.code} ${err.message}` : String(err)),
      );
    try {
      // A served service answers an unknown method with "method X", an unknown service with "service X".
      for (const s of SERVED_SERVICES) {
        expect(await status(s.typeName, "NoSuchMethod")).toBe(
          `${Code.UNIMPLEMENTED} method NoSuchMethod`,
        );
      }
      expect(await status("grpc.NoSuchService", "Check")).toBe(
        `${Code.UNIMPLEMENTED} service grpc.NoSuchService`,
      );
    } finally {
      c.close();
    }
  });
});

describe("netagentctl's own words", () => {
  it("an unknown method: its list of known methods prints as lines, every served one in it", async () => {
    const r = await ctl(["--addr", guest.addr, "call", "grpc.NoSuchService", "Frob"]);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toContain("\\u000a");
    const lines = r.stderr.split("\n");
    expect(lines[0]).toBe("netagentctl call: unknown method grpc.NoSuchService Frob; known:");
    const known = SERVED_SERVICES.flatMap((s) => s.methods.map((m) => `  ${s.typeName} ${m.name}`));
    expect(lines.slice(1, 1 + known.length)).toEqual(known);
    expect(known).toContain("  netagent.v1.Network Get");
    expect(lines.slice(1 + known.length)).toEqual(["(see `netagentctl call --help`)", ""]);
  });

  it("the user's words in that message stay escaped: no line of their own", async () => {
    const r = await ctl(["--addr", guest.addr, "call", "grpc.Nope\nFAKE LINE", "X\x1b[2J"]);
    expect(r.code).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe(
      "netagentctl call: unknown method grpc.Nope\\u000aFAKE LINE X\\u001b[2J; known:",
    );
    expect(r.stderr).not.toMatch(/^FAKE LINE/m);
    expect(r.stderr).not.toContain("\x1b");
  });

  it("call --help names every served service", async () => {
    const r = await ctl(["call", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "Calls any method of grpc.Health, grpc.AgentService or netagent.v1.Network (the\nservices the agent serves)",
    );
  });
});
