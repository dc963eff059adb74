/**
 * netagentctl route-get on a pod with a multipath default
 * route and a route `... tos 0x04` (and a prohibit route beside it), synced
 * into a guest: each lookup's two decisions, the pod's and the guest's,
 * printed side by side, and each the same as `ip -d -j route get` asked
 * of that namespace directly; the exit status says whether they agree.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookupDirect, type MirrorPair, tosAndMultipathPod } from "./complete-helpers";

let m: MirrorPair;

beforeAll(async () => {
  m = await tosAndMultipathPod();
});

afterAll(async () => {
  await m?.remove();
});

const lookup = lookupDirect;

describe("route-get", () => {
  it("route-get prints the pod's and the guest's decisions side by side", async () => {
    for (const words of [
      ["100.64.1.1"],
      ["100.64.1.1", "tos", "0x04"],
      ["8.8.8.8"],
      ["10.70.119.200", "from", "10.70.119.194"],
    ]) {
      const r = await m.ctl("route-get", "--netns", m.pod.name, ...words);
      const [pod, guest] = [await lookup(m.pod.name, words), await lookup(m.guest.ns.name, words)];
      expect(r.code, r.stdout + r.stderr).toBe(pod === guest ? 0 : 1);
      const lines = r.stdout.split("\n");
      expect(lines[0]).toBe(`route get ${words.join(" ")}`);
      expect(lines[1]).toMatch(new RegExp(`^ +POD \\(netns ${m.pod.name}\\) +GUEST \\(unix://`));
      expect(lines[2]?.[0]).toBe(pod === guest ? "=" : "~");
      expect(lines[3]).toBe(
        pod === guest ? "verdict: SAME" : "verdict: DIFFERENT (the guest decides otherwise)",
      );
      if (pod.startsWith("refused")) expect(lines[2]).toMatch(/^. {2}refused: Permission denied/);
      const j = JSON.parse(
        (await m.ctl("--json", "route-get", "--netns", m.pod.name, ...words)).stdout,
      );
      const { cache: _a, ...jp } = j.pod.route ?? {};
      expect(j.pod.error ? `refused: ${j.pod.error}` : JSON.stringify(jp)).toBe(pod);
      const { cache: _b, ...jg } = j.guest.route ?? {};
      expect(j.guest.error ? `refused: ${j.guest.error}` : JSON.stringify(jg)).toBe(guest);
    }
  });
});
