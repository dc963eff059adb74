/**
 * The complete read's listings (src/net/iproute/complete-listings.ts) in a
 * real netns: links, addresses and nexthop objects come from one `ip` run,
 * each listing what iproute2 prints when asked for it alone (read here
 * separately); on a kernel without nexthop objects (a stand-in `ip` that
 * fails every nexthop line as such a kernel does) the batch fails at that
 * line, and the read still answers links and addresses, the nexthop
 * listing with its failure.
 */
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readListings } from "../../src/net/iproute/complete-listings";
import { IpRunner } from "../../src/net/iproute/ip-runner";
import { Netns } from "../helpers/netns";
import { run } from "../helpers/process";
import { type TempDir, tempDir } from "../helpers/tmp";

let ns: Netns;
let dir: TempDir;

beforeAll(async () => {
  ns = await Netns.create("ncl");
  await ns.veth("eth0", "peer0", { mac: "02:00:00:00:0c:01" });
  await ns.ip("addr", "add", "10.12.0.1/24", "dev", "eth0");
  await ns.ip("nexthop", "add", "id", "7", "via", "10.12.0.2", "dev", "eth0");
  dir = tempDir("netagent-listings-");
});

afterAll(async () => {
  await ns?.remove();
  dir?.remove();
});

/** An `ip` without nexthop objects: any run with a nexthop line fails there; each run is logged. */
function noNexthops(): { bin: string; runs(): string[] } {
  const log = dir.join("runs");
  writeFileSync(log, "");
  const bin = dir.join("ip-no-nexthops");
  writeFileSync(
    bin,
    `#!/bin/sh
echo "$*" >> ${log}
case " $* " in *" nexthop "*) echo 'Object "nexthop" is unknown, try "ip help".' >&2; exit 255;; esac
case " $* " in *" -batch "*) ;; *) exec ip "$@";; esac
input=$(cat)
before=$(printf '%s\\n' "$input" | sed '/^nexthop/,$d')
printf '%s\\n' "$before" | ip "$@" || exit $?
if printf '%s\\n' "$input" | grep -q '^nexthop'; then
  echo 'Object "nexthop" is unknown, try "ip help".' >&2
  echo "Command failed -:$(printf '%s\\n' "$before" | wc -l | tr -d ' ')" >&2
  exit 1
fi
`,
  );
  chmodSync(bin, 0o755);
  return { bin, runs: () => readFileSync(log, "utf8").split("\n").filter(Boolean) };
}

const output = (l: { name: string; output: string }[], name: string) =>
  JSON.parse(l.find((x) => x.name === name)?.output ?? "null") as unknown;

describe("the complete read's listings", () => {
  it("links, addresses and nexthops from one run, each as ip prints it", async () => {
    const listings = await readListings(new IpRunner({ netns: ns.name }));
    for (const name of ["link", "nexthop"]) {
      expect(output(listings, name)).toEqual(
        JSON.parse(await ns.ip("-d", "-j", name, "show")) as unknown,
      );
    }
    // After a link listing in the same run, iproute2 prints a few link attributes more
    // with the addresses (linkmode, inet6_addr_gen_mode): as the read always listed them.
    const pair = await run("sh", [
      "-c",
      `printf 'link show\\naddress show\\n' | ip -n ${ns.name} -d -j -batch -`,
    ]);
    expect(output(listings, "address")).toEqual(JSON.parse(pair.stdout.split("\n")[1] ?? ""));
    expect(output(listings, "nexthop")).toEqual([
      expect.objectContaining({ id: 7, gateway: "10.12.0.2", dev: "eth0" }),
    ]);
  });

  it("without nexthop objects: links and addresses still, the nexthop listing its failure", async () => {
    const ip = noNexthops();
    const listings = await readListings(new IpRunner({ netns: ns.name, binary: ip.bin }));
    const whole = await readListings(new IpRunner({ netns: ns.name }));
    expect(output(listings, "link")).toEqual(output(whole, "link"));
    expect(output(listings, "address")).toEqual(output(whole, "address"));
    const nexthop = listings.find((l) => l.name === "nexthop");
    expect(nexthop?.output).toBe("");
    expect(nexthop?.error).toMatch(/nexthop" is unknown/);
    // The batch of three failed at its nexthop line; then two runs apart.
    // Each run's words (a netns name may hold "-4"): family-less batches only.
    const familyLess = ip
      .runs()
      .map((r) => r.split(" "))
      .filter((w) => w.includes("-batch") && !w.includes("-4") && !w.includes("-6"));
    expect(familyLess).toHaveLength(2);
  });
});
