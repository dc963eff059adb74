import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { type CpioRecord, encodeCpio, S_IFCHR, S_IFDIR, S_IFLNK, S_IFREG } from "../../rootfs/cpio";

interface Decoded {
  name: string;
  mode: number;
  uid: number;
  nlink: number;
  mtime: number;
  rdev: [number, number];
  data: string;
}

/** A reader written from the newc spec, independent of the writer. */
function decodeNewc(bytes: Uint8Array): Decoded[] {
  const text = new TextDecoder("latin1");
  const out: Decoded[] = [];
  let off = 0;
  const align = (n: number) => (n + 3) & ~3;
  for (;;) {
    const head = text.decode(bytes.subarray(off, off + 110));
    expect(head.slice(0, 6)).toBe("070701");
    const f = (i: number) => Number.parseInt(head.slice(6 + i * 8, 14 + i * 8), 16);
    const nameSize = f(11);
    const size = f(6);
    const name = text.decode(bytes.subarray(off + 110, off + 110 + nameSize - 1));
    expect(bytes[off + 110 + nameSize - 1]).toBe(0);
    off = align(off + 110 + nameSize);
    const data = text.decode(bytes.subarray(off, off + size));
    off = align(off + size);
    if (name === "TRAILER!!!") break;
    out.push({ name, mode: f(1), uid: f(2), nlink: f(4), mtime: f(5), rdev: [f(9), f(10)], data });
  }
  expect(off).toBe(bytes.length);
  return out;
}

const enc = (s: string) => new TextEncoder().encode(s);
const archive = (records: CpioRecord[]) => Buffer.concat([...encodeCpio(records)]);

describe("encodeCpio", () => {
  const records: CpioRecord[] = [
    { name: "dev", mode: S_IFDIR | 0o755 },
    { name: "dev/console", mode: S_IFCHR | 0o600, rdev: { major: 5, minor: 1 } },
    { name: "bin", mode: S_IFDIR | 0o755 },
    { name: "bin/sh", mode: S_IFLNK | 0o777, data: enc("/bin/busybox") },
    { name: "init", mode: S_IFREG | 0o755, data: enc("#!/bin/sh\n") },
    { name: "etc", mode: S_IFDIR | 0o755 },
    { name: "etc/resolv.conf", mode: S_IFREG | 0o644, data: new Uint8Array() },
  ];

  it("round-trips every kind of entry, owned by root with mtime 0", () => {
    const decoded = decodeNewc(archive(records));
    expect(decoded.map((d) => d.name)).toEqual(records.map((r) => r.name));
    expect(decoded[1]).toMatchObject({ mode: S_IFCHR | 0o600, rdev: [5, 1], data: "" });
    expect(decoded[3]).toMatchObject({ mode: S_IFLNK | 0o777, data: "/bin/busybox" });
    expect(decoded[4]).toMatchObject({ mode: S_IFREG | 0o755, data: "#!/bin/sh\n", nlink: 1 });
    expect(decoded[0]?.nlink).toBe(2);
    expect(decoded.every((d) => d.uid === 0 && d.mtime === 0)).toBe(true);
  });

  it("pads names and data to 4 bytes at every length", () => {
    for (let n = 1; n <= 9; n++) {
      const rs: CpioRecord[] = [
        { name: "x".repeat(n), mode: S_IFREG | 0o644, data: enc("y".repeat(n)) },
      ];
      expect(decodeNewc(archive(rs))).toMatchObject([{ name: "x".repeat(n), data: "y".repeat(n) }]);
    }
  });

  it("is deterministic", () => {
    expect(archive(records).equals(archive(records))).toBe(true);
  });

  it("rejects absolute, empty and duplicate names", () => {
    expect(() => archive([{ name: "/init", mode: S_IFREG }])).toThrow(/bad name/);
    expect(() => archive([{ name: "", mode: S_IFREG }])).toThrow(/bad name/);
    expect(() => archive([records[0] as CpioRecord, records[0] as CpioRecord])).toThrow(
      /duplicate dev/,
    );
  });

  it("is read back by GNU cpio when it is installed", () => {
    const r = spawnSync("cpio", ["-it", "--quiet"], { input: archive(records), encoding: "utf8" });
    if (r.error) return;
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual(records.map((x) => x.name));
  });
});
