/**
 * The packet filter end to end in a real VM: a pod netns on the host with a
 * service-mesh ruleset (istio-init's nat REDIRECT chains and a filter
 * policy, plus the IPv6 half), mirrored into the QEMU guest by
 * `netagentctl sync` over the agent channel, then read back independently
 * through the guest's debug console (`iptables-save` run by the guest's
 * shell, not the agent) and compared with the pod's own iptables-save. The
 * rules are live: guest-local TCP is redirected (the REDIRECT rule's packet
 * counter moves). A malformed input is refused with the line number and
 * changes nothing. The transcript goes to the log.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Vm } from "../../src/host/vm/vm";
import { normaliseRules } from "../../src/net/iptables/iptables-text";
import { restoreIn, rulesFixture, saveIn } from "../helpers/iptables";
import { Netns } from "../helpers/netns";
import { NETAGENTCTL } from "../host/helpers";
import { ensureGuestImage } from "./image";

const MAC = "52:54:00:0a:f8:15";
const BOOT_TIMEOUT_MS = 300_000;
// A TCG guest on two shared cores: each step gets minutes, not vitest's default minute.
const STEP_MS = 180_000;

function ctl(args: string[], input?: string) {
  const r = spawnSync(NETAGENTCTL, args, { input, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let vm: Vm;
let pod: Netns;
let wire: Netns;
let imageDir: string;
const transcript: string[] = [];
const say = (title: string, text: string) => transcript.push(`## ${title}\n${text.trimEnd()}`);

beforeAll(async () => {
  ensureGuestImage();
  imageDir = mkdtempSync(join(tmpdir(), "netagent-image-"));
  const kernel = existsSync("dist/guest/vmlinux") ? "vmlinux" : "vmlinuz";
  copyFileSync(`dist/guest/${kernel}`, `${imageDir}/${kernel}`);
  copyFileSync("dist/guest/initrd.img", `${imageDir}/initrd.img`);

  pod = await Netns.create("nv15p");
  wire = await Netns.create("nv15w");
  await pod.veth("eth0", "wire0", { mac: MAC, peerNs: wire });
  await pod.ip("addr", "add", "10.15.0.2/24", "dev", "eth0");
  await pod.ip("route", "add", "default", "via", "10.15.0.1", "dev", "eth0");
  restoreIn(pod.name, rulesFixture("mesh-istio.rules"));
  restoreIn(pod.name, rulesFixture("mesh-istio6.rules"), 6);

  vm = await Vm.start({
    kernel: `${imageDir}/${kernel}`,
    initrd: `${imageDir}/initrd.img`,
    mac: MAC,
    debugConsole: true,
    onNote: (line) => console.log(`vm: ${line}`),
  });
  await vm.waitForAgent(BOOT_TIMEOUT_MS);
}, BOOT_TIMEOUT_MS + 120_000);

afterAll(async () => {
  console.log(`\n${transcript.join("\n\n")}\n`);
  if (vm) await vm.stop();
  await pod?.remove();
  await wire?.remove();
  if (imageDir) rmSync(imageDir, { recursive: true, force: true });
}, 60_000);

/** A command in the guest's debug shell: its output lines; throws on a non-zero exit. */
async function guest(command: string): Promise<string[]> {
  const r = await vm.console.run(command, 60_000);
  if (r.status !== 0) throw new Error(`guest: ${command}: exit ${r.status}: ${r.lines.join("\n")}`);
  return r.lines;
}

describe("a mesh ruleset mirrored from a pod into the QEMU guest", () => {
  it(
    "the guest has the tools and the netfilter modules loaded, and no rules yet",
    async () => {
      // init loads the netfilter modules beside the agent and then writes
      // this marker (the agent's iptables calls wait for it; this shell's
      // own iptables-save does not).
      const marker = "/run/init.modules.done";
      await guest(
        // not a wait: the interval of a shell poll bounded at 600 for the marker
        `i=0; while [ ! -e ${marker} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; ls ${marker}`,
      );
      const modules = await guest("cut -d' ' -f1 /proc/modules");
      for (const m of [
        "nf_tables",
        "nft_compat",
        "x_tables",
        "nft_chain_nat",
        "xt_REDIRECT",
        "xt_owner",
      ]) {
        expect(modules).toContain(m);
      }
      const version = await guest("iptables-save --version 2>&1 || iptables -V");
      say("guest# iptables -V", version.join("\n"));
      expect(version.join("\n")).toMatch(/nf_tables/);
      expect(await guest("iptables-save")).toEqual([]);
    },
    STEP_MS,
  );

  it(
    "sync mirrors the pod's rules; the guest's own iptables-save reads them back equal",
    async () => {
      const podV4 = saveIn(pod.name, 4);
      const podV6 = saveIn(pod.name, 6);
      say(`host# ip netns exec POD iptables-save   (POD=${pod.name})`, podV4);

      const sync = ctl(["--addr", vm.agentAddress, "sync", "--netns", pod.name]);
      say(
        `host# netagentctl --addr ${vm.agentAddress} sync --netns POD`,
        sync.stdout + sync.stderr,
      );
      expect(sync.code, sync.stderr).toBe(0);
      expect(sync.stdout).toContain("packet filter (iptables): 23 rules sent in filter, nat");
      expect(sync.stdout).toContain("packet filter (ip6tables): 10 rules sent in nat");

      const guestV4 = await guest("iptables-save");
      const guestV6 = await guest("ip6tables-save");
      say("guest# iptables-save   (the guest's debug console, not the agent)", guestV4.join("\n"));
      expect(normaliseRules(guestV4.join("\n"))).toEqual(normaliseRules(podV4));
      expect(normaliseRules(guestV6.join("\n"))).toEqual(normaliseRules(podV6));
      expect(normaliseRules(guestV4.join("\n"))).toEqual(
        normaliseRules(rulesFixture("mesh-istio.rules")),
      );

      const diff = ctl(["--addr", vm.agentAddress, "diff", "--netns", pod.name]);
      say("host# netagentctl diff --netns POD", diff.stdout + diff.stderr);
      expect(diff.code, diff.stdout + diff.stderr).toBe(0);
      expect(diff.stdout).toMatch(/verdict: EQUAL \(1 interface, [^)]*\b33 packet-filter rules\)/);
    },
    STEP_MS,
  );
});

describe("a mesh ruleset mirrored from a pod into the QEMU guest: live in the guest kernel, malformed input refused", () => {
  it(
    "the rules are live in the guest kernel: local TCP goes through ISTIO_REDIRECT",
    async () => {
      const counter = async () => {
        const lines = await guest("iptables -t nat -L ISTIO_REDIRECT -v -n -x");
        // "pkts bytes target ...": the rule's row, not the "Chain ISTIO_REDIRECT" header.
        const rule = lines.find((l) => /^\s*\d+\s+\d+\s+REDIRECT\b/.test(l));
        if (rule === undefined) throw new Error(`no REDIRECT row in:\n${lines.join("\n")}`);
        return Number(rule.trim().split(/\s+/)[0]);
      };
      const before = await counter();
      // Out through eth0 (a local address would go via lo, which istio's rules
      // let pass): REDIRECTed to the guest's own port 15001 before it leaves,
      // where nothing listens, so the connect fails at once inside the guest.
      await vm.console.run(
        "nc -w 2 10.15.0.9 80 </dev/null || wget -q -T 2 -O /dev/null http://10.15.0.9/; echo done",
        30_000,
      );
      const after = await counter();
      say(
        "guest# iptables -t nat -L ISTIO_REDIRECT -v -n -x  (packets before, after one connect)",
        `${before} -> ${after}`,
      );
      expect(after).toBeGreaterThan(before);
    },
    STEP_MS,
  );

  it(
    "a malformed input is refused with the line number; the guest's rules are unchanged",
    async () => {
      const before = await guest("iptables-save");
      const bad = ctl(
        ["--addr", vm.agentAddress, "iptables", "set", "--file", "-"],
        "*nat\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -p tcp -j REDIRECT --to-ports 99999\nCOMMIT\n",
      );
      say("host# netagentctl iptables set --file - (a bad port on line 3)", bad.stderr);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain(
        "INVALID_ARGUMENT: data: iptables-restore: line 3: Port `99999' not valid",
      );
      expect(normaliseRules((await guest("iptables-save")).join("\n"))).toEqual(
        normaliseRules(before.join("\n")),
      );
    },
    STEP_MS,
  );
});
