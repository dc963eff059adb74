/**
 * A reader of the ELF facts the image builder needs, without running the
 * file (it may be for another architecture): the machine (e_machine), and
 * for a dynamically linked file its loader (PT_INTERP) and the shared
 * objects it names (DT_NEEDED). Pure: bytes in. Reads what the loader
 * reads, the program headers; section headers may be stripped.
 * Both classes (32/64-bit) and both byte orders, so a stray 32-bit or
 * big-endian file is named for what it is rather than misread.
 */

/** e_machine values (ELF gABI; linux include/uapi/linux/elf-em.h). */
export const EM = { I386: 3, ARM: 40, X86_64: 62, AARCH64: 183, RISCV: 243 } as const;

const MACHINE_NAMES: Record<number, string> = {
  [EM.I386]: "i386",
  [EM.ARM]: "arm",
  [EM.X86_64]: "x86_64",
  [EM.AARCH64]: "aarch64",
  [EM.RISCV]: "riscv",
};

/** The `uname -m` style name of an e_machine value, or `machine N`. */
export function machineName(machine: number): string {
  return MACHINE_NAMES[machine] ?? `machine ${machine}`;
}

export interface ElfInfo {
  bits: 32 | 64;
  littleEndian: boolean;
  /** e_type: 1 relocatable (a kernel module), 2 executable, 3 shared object or PIE. */
  type: number;
  machine: number;
  /** PT_INTERP: the dynamic loader's path; absent for a static file. */
  interp?: string;
  /** DT_NEEDED sonames, in the file's order. */
  needed: string[];
}

const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_INTERP = 3;
const DT_NULL = 0;
const DT_NEEDED = 1;
const DT_STRTAB = 5;

/** True when `bytes` starts with the ELF magic. */
export function isElf(bytes: Uint8Array): boolean {
  return bytes[0] === 0x7f && bytes[1] === 0x45 && bytes[2] === 0x4c && bytes[3] === 0x46;
}

/** The e_machine of an ELF file from its first 20 bytes or more; undefined when not ELF. */
export function elfMachine(head: Uint8Array): number | undefined {
  if (!isElf(head) || head.length < 20 || (head[5] !== 1 && head[5] !== 2)) return undefined;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  return view.getUint16(18, head[5] === 1);
}

/**
 * Reads an ELF file's machine, loader and needed libraries. Undefined when
 * `bytes` is not ELF; throws naming `name` and the field on a truncated or
 * inconsistent file (a header or table past the end, a string table that
 * no loaded segment maps).
 */
export function readElf(bytes: Uint8Array, name = "file"): ElfInfo | undefined {
  if (!isElf(bytes)) return undefined;
  const fail = (what: string): never => {
    throw new Error(`ELF ${name}: ${what}`);
  };
  const cls = bytes[4];
  const data = bytes[5];
  if (cls !== 1 && cls !== 2) fail(`EI_CLASS ${cls}`);
  if (data !== 1 && data !== 2) fail(`EI_DATA ${data}`);
  const bits = cls === 2 ? 64 : 32;
  const le = data === 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (off: number, len: number, what: string) => {
    if (off < 0 || off + len > bytes.length) fail(`${what} at ${off} is past the end`);
  };
  const u16 = (off: number) => view.getUint16(off, le);
  const u32 = (off: number) => view.getUint32(off, le);
  // 64-bit fields as numbers: an offset or address above 2^53 is not a file we map.
  const word = (off: number) => (bits === 64 ? Number(view.getBigUint64(off, le)) : u32(off));
  need(0, bits === 64 ? 64 : 52, "ELF header");
  const type = u16(16);
  const machine = u16(18);
  const phoff = word(bits === 64 ? 32 : 28);
  const phentsize = u16(bits === 64 ? 54 : 42);
  const phnum = u16(bits === 64 ? 56 : 44);

  const segments: { type: number; offset: number; vaddr: number; filesz: number }[] = [];
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    need(at, bits === 64 ? 56 : 32, `program header ${i}`);
    segments.push(
      bits === 64
        ? { type: u32(at), offset: word(at + 8), vaddr: word(at + 16), filesz: word(at + 32) }
        : { type: u32(at), offset: u32(at + 4), vaddr: u32(at + 8), filesz: u32(at + 16) },
    );
  }
  const cString = (off: number, what: string) => {
    need(off, 1, what);
    const end = bytes.indexOf(0, off);
    if (end < 0) fail(`${what} at ${off} has no terminating NUL`);
    return new TextDecoder().decode(bytes.subarray(off, end));
  };

  const info: ElfInfo = { bits, littleEndian: le, type, machine, needed: [] };
  const interp = segments.find((s) => s.type === PT_INTERP);
  if (interp) info.interp = cString(interp.offset, "PT_INTERP");

  const dynamic = segments.find((s) => s.type === PT_DYNAMIC);
  if (!dynamic) return info;
  const entSize = bits === 64 ? 16 : 8;
  const neededOffsets: number[] = [];
  let strtab: number | undefined;
  for (let at = dynamic.offset; at + entSize <= dynamic.offset + dynamic.filesz; at += entSize) {
    need(at, entSize, "dynamic entry");
    const tag = bits === 64 ? Number(view.getBigInt64(at, le)) : view.getInt32(at, le);
    const value = word(at + entSize / 2);
    if (tag === DT_NULL) break;
    if (tag === DT_NEEDED) neededOffsets.push(value);
    if (tag === DT_STRTAB) strtab = value;
  }
  if (neededOffsets.length === 0) return info;
  if (strtab === undefined) return fail("DT_NEEDED without DT_STRTAB");
  // DT_STRTAB is an address: the loaded segment holding it says where it is in the file.
  const load = segments.find(
    (s) => s.type === PT_LOAD && strtab >= s.vaddr && strtab < s.vaddr + s.filesz,
  );
  if (!load) return fail(`DT_STRTAB 0x${strtab.toString(16)} is in no PT_LOAD segment`);
  const strOffset = load.offset + (strtab - load.vaddr);
  info.needed = neededOffsets.map((o) => cString(strOffset + o, "DT_NEEDED name"));
  return info;
}
