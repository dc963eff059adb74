/**
 * netagent.v1 ReadResponse written by hand: a complete Read answers every
 * file under /proc/sys/net twice (the guest's and a fresh namespace's,
 * about 1,100 path and value pairs for a guest of two links), and
 * toBinary, run cold as an agent's few Reads run, took a share of each
 * Read's CPU comparable to reading the files. The answer is written once:
 * Read measures it against its size limit with the bytes it then sends
 * ({@link readResponseBytes}). Elements off the common shape (non-ASCII
 * text, unknown fields) are written by toBinary, in their place.
 */
import { type DescMessage, toBinary } from "@bufbuild/protobuf";
import {
  ListingSchema,
  type ReadResponse,
  ReadResponseSchema,
  SysctlFileSchema,
} from "../gen/network_pb";
import { isAscii, ProtoWriter, stringSize, varintSize } from "./proto-writer";

/** The repeated fields of ReadResponse: name, tag, element type, and the element's string fields by tag. */
const LISTS: readonly [string, number, DescMessage, readonly [string, number][]][] = [
  [
    "listings",
    0x0a,
    ListingSchema,
    [
      ["name", 0x0a],
      ["output", 0x12],
      ["error", 0x1a],
    ],
  ],
  [
    "sysctls",
    0x12,
    SysctlFileSchema,
    [
      ["path", 0x0a],
      ["value", 0x12],
    ],
  ],
  [
    "freshSysctls",
    0x1a,
    SysctlFileSchema,
    [
      ["path", 0x0a],
      ["value", 0x12],
    ],
  ],
];

/** One element: its field's tag, and its strings to write or its bytes from toBinary. */
interface Piece {
  tag: number;
  size: number;
  strings?: readonly [number, string][];
  bytes?: Uint8Array;
}

/** An element's strings by tag, when it is on the common shape (every string ASCII, nothing unknown). */
function plainStrings(
  item: Record<string, unknown>,
  schema: DescMessage,
  fields: readonly [string, number][],
): [number, string][] | undefined {
  if (item.$typeName !== schema.typeName || "$unknown" in item) return undefined;
  const out: [number, string][] = [];
  for (const [name, tag] of fields) {
    const s = item[name];
    if (!isAscii(s)) return undefined;
    out.push([tag, s]);
  }
  return out;
}

function pieces(m: Record<string, unknown>): Piece[] | undefined {
  if (m.$typeName !== ReadResponseSchema.typeName || "$unknown" in m) return undefined;
  const out: Piece[] = [];
  for (const [name, tag, schema, fields] of LISTS) {
    const list = m[name];
    if (!Array.isArray(list)) return undefined;
    for (const item of list) {
      const strings = plainStrings(item, schema, fields);
      if (strings !== undefined) {
        let size = 0;
        for (const [, s] of strings) size += stringSize(s);
        out.push({ tag, size, strings });
      } else {
        const bytes = toBinary(schema, item);
        out.push({ tag, size: bytes.length, bytes });
      }
    }
  }
  return out;
}

/** ReadResponse as toBinary writes it; undefined when the message is not one (toBinary decides then). */
function write(m: Record<string, unknown>): Uint8Array | undefined {
  const ps = pieces(m);
  if (ps === undefined) return undefined;
  let total = 0;
  for (const p of ps) total += varintSize(p.tag) + varintSize(p.size) + p.size;
  const w = new ProtoWriter(total);
  for (const p of ps) {
    if (p.bytes) {
      w.bytesField(p.tag, p.bytes);
      continue;
    }
    w.varint(p.tag);
    w.varint(p.size);
    for (const [tag, s] of p.strings ?? []) w.string(tag, s);
  }
  return w.out;
}

/** Answers already written for their size check, by answer. */
const written = new WeakMap<object, Uint8Array>();

/**
 * The answer's bytes, written now and kept for {@link encodeReadResponse}
 * to send: `answer` must not change afterwards.
 */
export function readResponseBytes(answer: ReadResponse): Uint8Array {
  const bytes =
    write(answer as unknown as Record<string, unknown>) ?? toBinary(ReadResponseSchema, answer);
  written.set(answer, bytes);
  return bytes;
}

/** The agent's encoder for ReadResponse: the bytes written for the size check, else written now. */
export function encodeReadResponse(message: { $typeName: string }): Uint8Array | undefined {
  const known = written.get(message);
  if (known !== undefined) return known;
  try {
    return write(message as unknown as Record<string, unknown>);
  } catch {
    return undefined;
  }
}
