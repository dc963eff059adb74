/**
 * The `netagent-policy` entry of Kata's init data, where the guest has it.
 * Kata (Confidential Containers) hands a pod's init data to the guest as a
 * block device: 8 bytes `initdata`, a little-endian u64 length, then that
 * many bytes of gzip holding a TOML document (`version`, `algorithm`,
 * `[data]` with string entries such as `policy.rego`). Its digest is bound
 * into the TEE's launch measurement by the runtime. The Kata agent reads it
 * at start and writes the TOML to {@link EXTRACTED}; that copy is read
 * first (the bytes the agent hands on to attestation; netagent checks no
 * digest against a measurement itself), waiting up to
 * {@link INITDATA_WAIT_MS} for it when a device is there, and the device
 * itself only when no agent wrote the copy (netagent alone in the guest).
 */
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
} from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

const EXTRACTED = "/run/confidential-containers/initdata/initdata.toml";
const INITDATA_KEY = "netagent-policy";
const INITDATA_WAIT_MS = 10_000;
/** Init data larger than this is not read (the policy is a few KiB). */
const MAX_INITDATA_BYTES = 4 << 20;
const MAGIC = "initdata";

export interface InitdataPlaces {
  extracted: string;
  devDir: string;
  waitMs: number;
}

const DEFAULT_PLACES: InitdataPlaces = {
  extracted: EXTRACTED,
  devDir: "/dev",
  waitMs: INITDATA_WAIT_MS,
};

/** The init data's `[data]."netagent-policy"` text, or undefined when the guest has no init data or no such entry. Throws on init data that does not read. */
export async function initdataPolicy(
  places: InitdataPlaces = DEFAULT_PLACES,
): Promise<string | undefined> {
  let toml: string | undefined;
  if (existsSync(places.extracted)) toml = readFileSync(places.extracted, "utf8");
  else {
    const device = findDevice(places.devDir);
    if (device === undefined) return undefined;
    const until = Date.now() + places.waitMs;
    while (Date.now() < until && !existsSync(places.extracted))
      await new Promise((r) => setTimeout(r, 50));
    toml = existsSync(places.extracted)
      ? readFileSync(places.extracted, "utf8")
      : readDevice(device);
  }
  return entryOf(toml);
}

/** `[data]."netagent-policy"` of an init data TOML document. */
export function entryOf(toml: string): string | undefined {
  let doc: { data?: Record<string, unknown> };
  try {
    doc = Bun.TOML.parse(toml) as typeof doc;
  } catch (err) {
    throw new Error(`init data: not TOML: ${(err as Error).message}`);
  }
  const value = doc.data?.[INITDATA_KEY];
  if (value === undefined) return undefined;
  if (typeof value !== "string") throw new Error(`init data: data.${INITDATA_KEY} is not a string`);
  return value;
}

/** A block device vd* or sd* starting with the magic. */
function findDevice(devDir: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(devDir);
  } catch {
    return undefined;
  }
  for (const name of names.filter((n) => /^(vd|sd)[a-z]+$/.test(n)).sort()) {
    const path = join(devDir, name);
    try {
      if (!statSync(path).isBlockDevice()) continue;
      if (readAt(path, 0, 8).toString("latin1") === MAGIC) return path;
    } catch {
      // not readable: not ours
    }
  }
  return undefined;
}

function readAt(path: string, offset: number, length: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, offset);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** The TOML of an init data device (magic, u64 LE length, gzip). */
export function readDevice(path: string): string {
  const length = readAt(path, 8, 8).readBigUInt64LE(0);
  if (length > BigInt(MAX_INITDATA_BYTES))
    throw new Error(`init data ${path}: ${length} bytes, more than ${MAX_INITDATA_BYTES}`);
  const body = readAt(path, 16, Number(length));
  return gunzipSync(body, { maxOutputLength: MAX_INITDATA_BYTES }).toString("utf8");
}
