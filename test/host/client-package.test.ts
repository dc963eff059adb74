/**
 * The client library as a user gets it: `npm pack` of this repository,
 * installed into an empty project (offline: the package's dependencies are
 * packed from this repository's node_modules), then the README's example
 * run by Node and by Bun against a real agent in a fresh network
 * namespace, over unix:// and, under Node, over hvsock:// through a
 * hybrid-vsock muxer (a unix socket that takes `CONNECT <port>\n`, answers
 * `OK`, then carries the bytes to the agent, as Firecracker's does). What
 * the example prints is checked against `ip -json` read separately. The
 * declarations are checked too: the example compiles under `strict` with
 * Node's own module resolution, without skipLibCheck.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pkg from "../../package.json" with { type: "json" };
import { type RunningAgent, startAgent } from "../helpers/agent";
import { Netns, randomMac } from "../helpers/netns";
import { type TempDir, tempDir } from "../helpers/tmp";

const ROOT = new URL("../..", import.meta.url).pathname;
const BUN = join(ROOT, "node_modules/.bin/bun");
const TSC = join(ROOT, "node_modules/.bin/tsc");

/**
 * The machine's Node: under `bun --bun` the first `node` on PATH is Bun's
 * stand-in (a /tmp/bun-node-* directory), which would make "under Node" Bun.
 */
function realNode(): string {
  for (const d of (process.env.PATH ?? "").split(":")) {
    if (d === "" || d.includes("bun-node") || d.includes("node_modules")) continue;
    if (existsSync(join(d, "node"))) return join(d, "node");
  }
  throw new Error("no node on PATH (outside Bun's stand-in)");
}
const NODE = realNode();

/** The fenced block after `<!-- client-example -->` in the README. */
function readmeExample(): string {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const m = /<!-- client-example -->\n```js\n([\s\S]*?)```/.exec(readme);
  if (!m?.[1]) throw new Error("README: no ```js block after <!-- client-example -->");
  return m[1];
}

function sh(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: "utf8", timeout: 120_000 });
}

/** Runs `cmd` in `cwd` (no shell) to its end, within a minute. */
function run(
  cmd: string,
  args: string[],
  cwd: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, encoding: "utf8", timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let dir: TempDir;
let project: string;
let ns: Netns;
let agent: RunningAgent;
let muxer: Server | undefined;
const piped: Socket[] = [];
const mac = randomMac();

beforeAll(async () => {
  if (!existsSync(join(ROOT, "dist/client/index.js"))) {
    throw new Error("dist/client is missing: run `npm run build` first");
  }
  dir = tempDir();
  const packs = dir.join("packs");
  project = dir.join("project");
  sh("mkdir", ["-p", packs, project], ROOT);
  sh("npm", ["pack", "--silent", "--pack-destination", packs], ROOT);
  // The package's dependencies and theirs, packed from node_modules (npm's
  // offline cache holds tarballs but not the registry's metadata);
  // --ignore-scripts: a package's own prepare script (husky...) is not ours to run.
  for (const dep of runtimeDependencies()) {
    sh(
      "npm",
      [
        "pack",
        "--silent",
        "--ignore-scripts",
        "--pack-destination",
        packs,
        join(ROOT, "node_modules", dep),
      ],
      ROOT,
    );
  }
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "client-example", private: true, type: "module" }),
  );
  const tarballs = readdirTgz(packs);
  sh("npm", ["install", "--offline", "--no-audit", "--no-fund", ...tarballs], project);
  writeFileSync(join(project, "example.mjs"), readmeExample());

  ns = await Netns.create("ncl");
  await ns.ip("link", "add", "eth0", "type", "veth", "peer", "name", "peer0");
  await ns.ip("link", "set", "eth0", "address", mac, "mtu", "1400", "up");
  await ns.ip("address", "add", "10.9.0.2/24", "dev", "eth0");
  agent = await startAgent({ netns: ns });
}, 300_000);

afterAll(async () => {
  for (const s of piped) s.destroy();
  await new Promise((r) => (muxer ? muxer.close(r) : r(undefined)));
  await agent?.stop();
  await ns?.remove();
  dir?.remove();
});

/** The package's dependencies, transitively, as installed in this repository's node_modules. */
function runtimeDependencies(): string[] {
  const seen = new Set<string>();
  const visit = (deps: Record<string, string> | undefined) => {
    for (const dep of Object.keys(deps ?? {})) {
      if (seen.has(dep)) continue;
      seen.add(dep);
      const manifest = join(ROOT, "node_modules", dep, "package.json");
      visit(JSON.parse(readFileSync(manifest, "utf8")).dependencies);
    }
  };
  visit(pkg.dependencies);
  return [...seen];
}

function readdirTgz(at: string): string[] {
  return sh("ls", [at], at)
    .split("\n")
    .filter((f) => f.endsWith(".tgz"))
    .map((f) => join(at, f));
}

/** What the example must print for this namespace, from `ip -json` read on its own. */
async function expectedLines(): Promise<string[]> {
  const links = await ns.json<
    {
      ifname: string;
      address: string;
      mtu: number;
      addr_info?: { local: string; prefixlen: number; family: string; scope: string }[];
    }[]
  >("address", "show");
  const eth0 = links.find((l) => l.ifname === "eth0");
  const v4 = (eth0?.addr_info ?? []).filter((a) => a.family === "inet");
  expect(eth0?.address).toBe(mac);
  return [
    `agent ${pkg.version}`,
    `eth0 ${eth0?.address} mtu ${eth0?.mtu} ${v4.map((a) => `${a.local}/${a.prefixlen}`).join(" ")}`,
  ];
}

async function runExample(runtime: string, addr: string): Promise<string[]> {
  const r = await run(runtime, ["example.mjs", addr], project);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return r.stdout.trimEnd().split("\n");
}

function checkOutput(lines: string[], expected: string[]): void {
  expect(lines[0]).toBe(expected[0]);
  // eth0's line as ip reads it (the guest's other link, peer0, has its own line).
  expect(lines.filter((l) => l.startsWith("eth0 "))).toEqual([expected[1]]);
  expect(lines.at(-1)).toBe(
    'INVALID_ARGUMENT: interface.hwAddr: "not-a-mac" is not a MAC address (xx:xx:xx:xx:xx:xx)',
  );
}

describe("netagent/client from the npm pack tarball", () => {
  it("installs with its declarations and generated types, and the example type-checks", () => {
    const installed = JSON.parse(
      readFileSync(join(project, "node_modules/netagent/package.json"), "utf8"),
    );
    expect(installed.exports["./client"].default).toBe("./dist/client/index.js");
    writeFileSync(join(project, "example.mts"), readmeExample());
    const types = join(ROOT, "node_modules/@types");
    sh(
      TSC,
      [
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "--types",
        "node",
        "--typeRoots",
        types,
        "example.mts",
      ],
      project,
    );
  });

  it("runs the README example under Node over unix://", async () => {
    const version = sh(NODE, ["-p", "process.versions.bun ?? process.version"], project).trim();
    expect(version).toMatch(/^v\d+\./);
    expect(Number(version.slice(1).split(".")[0])).toBeGreaterThanOrEqual(20);
    checkOutput(await runExample(NODE, `unix://${agent.socket}`), await expectedLines());
  });

  it("runs the README example under Node over hvsock:// (a hybrid-vsock muxer in front of the agent)", async () => {
    const path = dir.join("vm.hvsock");
    const ports: string[] = [];
    muxer = createServer((socket) => {
      piped.push(socket);
      socket.once("data", (first: Buffer) => {
        ports.push(first.toString("latin1"));
        const up = connect(agent.socket, () => {
          socket.write("OK 1073741824\n");
          socket.pipe(up);
          up.pipe(socket);
        });
        piped.push(up);
        up.on("error", () => socket.destroy());
      });
      socket.on("error", () => {});
    });
    await new Promise<void>((r) => muxer?.listen(path, r));
    checkOutput(await runExample(NODE, `hvsock://${path}:1024`), await expectedLines());
    expect(ports).toEqual(["CONNECT 1024\n"]);
  });

  it("runs the README example under Bun", async () => {
    checkOutput(await runExample(BUN, `unix://${agent.socket}`), await expectedLines());
  });

  it("dials vsock:// under Bun (nothing listens here: UNAVAILABLE), refuses it under Node (UNIMPLEMENTED)", async () => {
    const probe = [
      'import { AgentClient, Code } from "netagent/client";',
      "try { await AgentClient.connect('vsock://1:1', 1000); console.log('connected'); }",
      "catch (e) { console.log(Code[e.code]); }",
    ].join("\n");
    writeFileSync(join(project, "vsock.mjs"), probe);
    expect((await run(BUN, ["vsock.mjs"], project)).stdout.trim()).toBe("UNAVAILABLE");
    expect((await run(NODE, ["vsock.mjs"], project)).stdout.trim()).toBe("UNIMPLEMENTED");
  });
});
