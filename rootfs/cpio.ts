/**
 * A writer for the "newc" cpio format, the one the kernel unpacks as an
 * initramfs. Pure: records in, byte chunks out. Every entry is owned by
 * root with mtime 0, so the same inputs give the same archive; device nodes
 * are written as headers, so building needs no root and no mknod.
 */

export const S_IFDIR = 0o040000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;
export const S_IFCHR = 0o020000;

export interface CpioRecord {
  /** Path inside the archive, without a leading slash. */
  name: string;
  /** File type bits and permissions, as in st_mode. */
  mode: number;
  /** Contents of a regular file, or the target of a symlink. */
  data?: Uint8Array;
  /** Device number of a character or block device. */
  rdev?: { major: number; minor: number };
}

const MAGIC = "070701";
const TRAILER = "TRAILER!!!";
const encoder = new TextEncoder();

function hex8(n: number): string {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) throw new RangeError(`cpio: ${n}`);
  return n.toString(16).padStart(8, "0");
}

function pad4(length: number): Uint8Array {
  return new Uint8Array((4 - (length % 4)) % 4);
}

function header(ino: number, record: CpioRecord): Uint8Array {
  const name = encoder.encode(`${record.name}\0`);
  const size = record.data?.length ?? 0;
  const fields = [
    ino,
    record.mode,
    0, // uid
    0, // gid
    (record.mode & 0o170000) === S_IFDIR ? 2 : 1, // nlink
    0, // mtime
    size,
    0, // devmajor
    0, // devminor
    record.rdev?.major ?? 0,
    record.rdev?.minor ?? 0,
    name.length,
    0, // check
  ];
  const text = encoder.encode(MAGIC + fields.map(hex8).join(""));
  const out = new Uint8Array(text.length + name.length + pad4(text.length + name.length).length);
  out.set(text, 0);
  out.set(name, text.length);
  return out;
}

/**
 * Encodes records into a newc archive, trailer included. Names must be
 * unique and relative; parents should come before their children.
 */
export function* encodeCpio(records: Iterable<CpioRecord>): Generator<Uint8Array> {
  let ino = 1;
  const names = new Set<string>();
  for (const record of records) {
    if (record.name.startsWith("/") || record.name === "") {
      throw new Error(`cpio: bad name ${JSON.stringify(record.name)}`);
    }
    if (names.has(record.name)) throw new Error(`cpio: duplicate ${record.name}`);
    names.add(record.name);
    yield header(ino++, record);
    if (record.data && record.data.length > 0) {
      yield record.data;
      yield pad4(record.data.length);
    }
  }
  yield header(0, { name: TRAILER, mode: 0 });
}
