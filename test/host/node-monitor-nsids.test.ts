/**
 * The follower's node monitor (src/host/follow/node-monitor.ts) giving pod
 * namespaces their nsids: many asked for at once (a follower's start) are
 * set by one or two `ip` runs, not one each (counted through a recording
 * stand-in `ip` that runs the real one), and each gets the nsid the
 * kernel's table has for it, read here separately with `ip netns list-id`
 * in the follower's namespace.
 */
import { afterEach, expect, it } from "vitest";
import { NodeMonitor } from "../../src/host/follow/node-monitor";
import { recordingIp } from "../hardening/fake-ip";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";

const spaces: Netns[] = [];
let dir: TempDir | undefined;
let monitor: NodeMonitor | undefined;
afterEach(async () => {
  monitor?.stop();
  for (const ns of spaces.splice(0)) await ns.remove();
  dir?.remove();
  dir = monitor = undefined;
});

it("sets the nsids of pods asked for at once in one or two ip runs, each the kernel's", async () => {
  const follower = await Netns.create("nmf");
  spaces.push(follower);
  const pods: Netns[] = [];
  for (let i = 0; i < 8; i++) pods.push(await Netns.create(`nmp${i}`));
  spaces.push(...pods);
  dir = tempDir("netagent-nsids-");
  const ip = recordingIp(dir);
  // The follower's namespace is where the nsids go: its ip runs inside it.
  const wrapper = dir.join("ip-in-follower");
  await Bun.write(wrapper, `#!/bin/sh\nexec ip netns exec ${follower.name} ${ip.bin} "$@"\n`);
  await run("chmod", ["755", wrapper]);
  const warnings: string[] = [];
  monitor = new NodeMonitor((m) => warnings.push(m), "all-nsid", wrapper);

  const subs = await Promise.all(
    pods.map((p) => monitor?.subscribe(`/run/netns/${p.name}`, () => {})),
  );

  const batches = ip.calls().filter((c) => c.stdin.includes("netns set"));
  expect(batches.length).toBeGreaterThanOrEqual(1);
  expect(batches.length).toBeLessThanOrEqual(2);
  const listed = JSON.parse(
    (await run("ip", ["netns", "exec", follower.name, "ip", "-j", "netns", "list-id"])).stdout,
  ) as { nsid: number; name?: string }[];
  pods.forEach((p, i) => {
    const nsid = listed.find((e) => e.name === p.name)?.nsid;
    expect(nsid).toBeTypeOf("number");
    expect(subs[i]?.how).toBe(`nsid ${nsid}`);
  });
  expect(warnings).toEqual([]);
  for (const s of subs) s?.stop();
});
