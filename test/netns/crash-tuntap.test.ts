/**
 * An agent killed (-9) in the middle of an Apply that made a tun device:
 * the next start restores the state from before from its change record,
 * and deletes the device the change made (the record's `created`), while
 * a tun device that was there before stays. The kill is real: a stand-in
 * `ip` runs the real one, then kills its parent (the agent) once a batch
 * that made tun9 has run. The network is read independently (`ip -json`).
 */
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { AgentClient } from "../../src/client/client";
import { ApplyRequestSchema, Network, StateSchema } from "../../src/gen/network_pb";
import { type RunningAgent, startAgent } from "../helpers/agent";
import { Netns } from "../helpers/netns";
import { tempDir } from "../helpers/tmp";
import { waitFor } from "../helpers/wait";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
});

const KILLER = `#!/bin/sh
# Runs the real ip; after a batch that made tun9, kills the agent (its parent) with SIGKILL.
case " $* " in
*" -batch "*)
  in=$(mktemp)
  cat > "$in"
  ip "$@" < "$in"
  rc=$?
  if grep -q "^tuntap add dev tun9 " "$in"; then kill -9 "$PPID"; fi
  rm -f "$in"
  exit $rc ;;
esac
exec ip "$@"
`;

describe("a change record of an Apply that made a tun device", () => {
  it("the next start deletes the device made and keeps the one that was there", async () => {
    const ns = await Netns.create("nt-ctun");
    cleanups.push(() => ns.remove());
    await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0e:11" });
    await ns.ip("addr", "add", "10.0.0.2/16", "dev", "eth0");
    await ns.ip("tuntap", "add", "dev", "tun4", "mode", "tun");
    await ns.ip("addr", "add", "10.4.0.1/24", "dev", "tun4");
    await ns.ip("link", "set", "tun4", "up");
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    const ipBin = join(dir.path, "ip");
    writeFileSync(ipBin, KILLER);
    chmodSync(ipBin, 0o755);
    const stateDir = join(dir.path, "state");
    const links = async () =>
      (await ns.json<{ ifname: string }[]>("link", "show")).map((l) => l.ifname).sort();
    const view = async () =>
      JSON.stringify([
        await links(),
        await ns.json("addr", "show"),
        await ns.json("route", "show", "table", "all"),
        await ns.json("rule", "show"),
      ]).replaceAll(/"(valid|preferred)_life_time":\d+/g, "");
    // DAD moves by itself: the state before is read once it is over.
    await waitFor(async () => !(await ns.ip("-j", "addr", "show")).includes('"tentative"'), {
      what: "no tentative address",
    });
    const before = await view();

    const doomed = await startAgent({ netns: ns, stateDir, ipBin, args: ["--ip-session", "off"] });
    cleanups.push(() => doomed.stop());
    const client = await AgentClient.connect(`unix://${doomed.socket}`);
    cleanups.push(() => client.close());
    const desired = create(StateSchema, {
      interfaces: [
        {
          name: "tun9",
          mtu: 1400,
          up: true,
          noarp: true,
          addresses: [{ address: "10.9.0.1", prefix: 24 }],
          tuntap: { mode: "tun" },
        },
      ],
      routes: [{ table: 254, family: 4, dest: "10.99.0.0/16", device: "tun9" }],
    });
    const call = client.unary(Network.method.apply, create(ApplyRequestSchema, { desired }));
    await expect(call).rejects.toThrow();
    await waitFor(async () => !doomed.child.running, { what: "the agent killed" });
    // Cut short: tun9 is there, and so is the record of the change.
    expect(await links()).toContain("tun9");
    expect(existsSync(join(stateDir, "change.rec"))).toBe(true);

    const agent: RunningAgent = await startAgent({ netns: ns, stateDir });
    cleanups.push(() => agent.stop());
    expect(await links()).toEqual(["eth0", "lo", "peer0", "tun4"]);
    expect(await view()).toBe(before);
    expect(existsSync(join(stateDir, "change.rec"))).toBe(false);
  });
});
