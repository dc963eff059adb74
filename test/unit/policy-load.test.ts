/**
 * Where the policy comes from (src/agent/policy/load.ts, initdata.ts), the
 * phase clock kept in the state directory (phase.ts), and the front mode
 * watch that starts it (container-watch.ts), on the wire bytes Kata sends.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { afterAll, describe, expect, it } from "vitest";
import { createdContainer, watchContainers } from "../../src/agent/policy/container-watch";
import { entryOf, readDevice } from "../../src/agent/policy/initdata";
import { loadPolicy } from "../../src/agent/policy/load";
import { PHASE_FILE, PhaseClock } from "../../src/agent/policy/phase";
import { PolicyError, parsePolicy } from "../../src/agent/policy/schema";
import type { ForwardedCall } from "../../src/ttrpc/forward";
import { tempDir } from "../helpers/tmp";

const dir = tempDir("netagent-policy-load-");
afterAll(() => dir.remove());
const POLICY = '{"netagentPolicy": 1, "reads": true}';
const nowhere = {
  extracted: join(dir.path, "none.toml"),
  devDir: join(dir.path, "nodev"),
  waitMs: 0,
};

describe("loadPolicy", () => {
  const file = (name: string, text: string) => {
    const p = join(dir.path, name);
    writeFileSync(p, text);
    return p;
  };

  it("no source: no policy (the agent as today)", async () => {
    expect(
      await loadPolicy({ initdata: nowhere, defaultPath: join(dir.path, "absent.json") }),
    ).toBeUndefined();
  });

  it("the flag wins over the command line, which wins over init data and the default path", async () => {
    const a = file("a.json", POLICY);
    const b = file("b.json", '{"netagentPolicy": 1}');
    const got = await loadPolicy({ flag: a, cmdline: b, initdata: nowhere, defaultPath: b });
    expect(got?.source).toBe(`--policy ${a}`);
    expect((await loadPolicy({ cmdline: b, initdata: nowhere }))?.source).toBe(
      `netagent.policy= ${b}`,
    );
    expect((await loadPolicy({ initdata: nowhere, defaultPath: a }))?.policy.reads).toBe(true);
  });

  it("a named file that is missing or does not parse is a PolicyError, never allow-all", async () => {
    await expect(
      loadPolicy({ flag: join(dir.path, "missing.json"), initdata: nowhere }),
    ).rejects.toThrow(PolicyError);
    const bad = file("bad.json", '{"netagentPolicy": 1, "routes": {"tables": ["main"]}}');
    await expect(loadPolicy({ flag: bad, initdata: nowhere })).rejects.toThrow(
      /routes\.tables\.0: /,
    );
    const broken = file("broken.json", "{");
    await expect(loadPolicy({ initdata: nowhere, defaultPath: broken })).rejects.toThrow(
      /not JSON/,
    );
  });

  it("init data: the entry netagent-policy of the TOML the Kata agent extracted", async () => {
    const toml = `version = "0.1.0"\nalgorithm = "sha256"\n\n[data]\n"policy.rego" = "package agent_policy"\n"netagent-policy" = '''\n${POLICY}\n'''\n`;
    const extracted = file("initdata.toml", toml);
    const got = await loadPolicy({ initdata: { ...nowhere, extracted } });
    expect(got?.source).toBe("init data netagent-policy");
    expect(got?.policy.reads).toBe(true);
    expect(entryOf('version = "0.1.0"\n[data]\nx = "y"\n')).toBeUndefined();
    expect(() => entryOf('[data]\n"netagent-policy" = 3\n')).toThrow(/not a string/);
  });

  it("init data device: magic, little-endian length, gzip of the TOML", () => {
    const toml = `[data]\n"netagent-policy" = '${POLICY}'\n`;
    const body = gzipSync(toml);
    const head = Buffer.alloc(16);
    head.write("initdata", 0, "latin1");
    head.writeBigUInt64LE(BigInt(body.length), 8);
    const dev = file("initdata.img", "");
    writeFileSync(dev, Buffer.concat([head, body, Buffer.alloc(512)]));
    expect(entryOf(readDevice(dev))).toBe(POLICY);
  });
});

describe("PhaseClock", () => {
  const policy = parsePolicy('{"netagentPolicy": 1, "phases": {"settleMs": 1000}}', "t");
  it("set-up until the settling time after the workload started, kept across restarts", () => {
    const state = join(dir.path, "state");
    mkdirSync(state);
    let now = 5_000;
    const clock = new PhaseClock(policy, state, () => now);
    expect(clock.phase()).toBe("setup");
    expect(clock.workloadStarted()).toBe(true);
    expect(clock.workloadStarted()).toBe(false);
    now = 5_999;
    expect(clock.phase()).toBe("setup");
    now = 6_000;
    expect(clock.phase()).toBe("running");
    // A restarted agent reads the moment back.
    expect(new PhaseClock(policy, state, () => 6_000).phase()).toBe("running");
    // A record that does not parse: started long ago (the stricter reading).
    writeFileSync(join(state, PHASE_FILE), "garbage");
    expect(new PhaseClock(policy, state, () => 2_000).phase()).toBe("running");
  });
});

describe("the front mode watch on CreateContainer and StartContainer", () => {
  const createRequest = (id: string, type: string) => {
    const entry = new BinaryWriter()
      .tag(1, 2)
      .string("io.kubernetes.cri.container-type")
      .tag(2, 2)
      .string(type)
      .finish();
    const spec = new BinaryWriter().tag(1, 2).string("1.0.2").tag(7, 2).bytes(entry).finish();
    return new BinaryWriter().tag(1, 2).string(id).tag(6, 2).bytes(spec).finish();
  };
  const startRequest = (id: string) => new BinaryWriter().tag(1, 2).string(id).finish();
  const call = (method: string, payload: Uint8Array) =>
    ({ request: { service: "grpc.AgentService", method, payload } }) as unknown as ForwardedCall;
  const ok = { response: new Uint8Array(), code: 0, message: "" };

  it("reads the container's type from its OCI annotations", () => {
    expect(createdContainer(createRequest("c1", "sandbox"))).toEqual({ id: "c1", type: "sandbox" });
    expect(createdContainer(new Uint8Array([0xff, 0xff]))).toBeUndefined();
  });

  it("starts the clock at the first workload container's StartContainer answered OK, not the pause container's", () => {
    let started = 0;
    const watch = watchContainers(() => started++);
    const pass = (method: string, payload: Uint8Array) => {
      const c = call(method, payload);
      watch.onRequest(c);
      watch.onAnswer(c, ok);
    };
    pass("CreateContainer", createRequest("pause", "sandbox"));
    pass("StartContainer", startRequest("pause"));
    expect(started).toBe(0);
    pass("CreateContainer", createRequest("app", "container"));
    const start = call("StartContainer", startRequest("app"));
    watch.onRequest(start);
    expect(started).toBe(0);
    watch.onAnswer(start, ok);
    expect(started).toBe(1);
    pass("StartContainer", startRequest("app"));
    expect(started).toBe(1);
  });
});
