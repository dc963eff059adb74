/**
 * Requests for the validation tests (validate-*.test.ts): a Kata Route,
 * Interface or ARPNeighbor with defaults, the check that a call is refused
 * INVALID_ARGUMENT naming the field and the value, and names a link cannot
 * have.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "vitest";
import { ARPNeighborSchema, InterfaceSchema, IPFamily, RouteSchema } from "../../src/gen/types_pb";
import { Code, TtrpcError } from "../../src/ttrpc/codes";

export type RouteInit = MessageInitShape<typeof RouteSchema>;
export type InterfaceInit = MessageInitShape<typeof InterfaceSchema>;
export type NeighborInit = MessageInitShape<typeof ARPNeighborSchema>;

export const route = (r: RouteInit) => create(RouteSchema, { device: "eth0", ...r } as RouteInit);
export const iface = (i: InterfaceInit) =>
  create(InterfaceSchema, { hwAddr: "02:00:00:00:00:01", ...i });
export const neighbor = (n: NeighborInit) =>
  create(ARPNeighborSchema, {
    toIPAddress: { family: IPFamily.v4, address: "10.0.0.1" },
    device: "eth0",
    lladdr: "02:00:00:00:00:02",
    ...n,
  } as NeighborInit);

/** Runs `fn` and returns the TtrpcError it must throw: INVALID_ARGUMENT naming field and value. */
export function invalid(fn: () => unknown, field: string, value: unknown): TtrpcError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(TtrpcError);
  const err = caught as TtrpcError;
  expect(err.code).toBe(Code.INVALID_ARGUMENT);
  expect(err.message.startsWith(`${field}: `), err.message).toBe(true);
  expect(err.message).toContain(JSON.stringify(value));
  return err;
}

export const BAD_NAMES: [string, string][] = [
  ["empty", ""],
  ["a newline", "eth0\nroute flush"],
  ["NUL", "eth\u00000"],
  ["a leading '-'", "-eth0"],
  ["a leading '.'", ".eth0"],
  ["16 bytes", "abcdefghijklmnop"],
  ["unicode", "éth0"],
  ["a space", "eth 0"],
  ["a slash", "eth/0"],
  ["a colon", "eth0:1"],
  ["a quote", 'eth"0'],
  ["a '#'", "eth#0"],
];
