/**
 * Model values to the Kata protobuf shapes, for both sides: the agent
 * answers with them, the host builds its requests with them. (Wire to
 * model, with validation, is src/agent/validate/validate-interface-neighbors.ts.)
 */
import { create } from "@bufbuild/protobuf";
import {
  type Interface,
  InterfaceSchema,
  IPFamily,
  type Route as ProtoRoute,
  RouteSchema,
} from "../gen/types_pb";
import type { Link, Route } from "../net/model/model";
import { rawFlags } from "../net/vocabulary/links";
import { RTNH_F_ONLINK } from "../net/vocabulary/routes";

/** The model's family as the protocol's enum. */
export function protoFamily(family: 4 | 6): IPFamily {
  return family === 6 ? IPFamily.v6 : IPFamily.v4;
}

/** An address as Kata's IPAddress: mask is the prefix length in decimal. */
export function addressToProto(a: { family: 4 | 6; address: string; prefix: number }) {
  return { family: protoFamily(a.family), address: a.address, mask: String(a.prefix) };
}

/**
 * A route as ListRoutes reports it: dest is always a CIDR, the default
 * being "0.0.0.0/0" or "::/0" (never "", never Kata's "::1"); source is the
 * preferred source; family, flags and mtu are filled.
 */
export function routeToProto(r: Route): ProtoRoute {
  // The message create(RouteSchema, ...) makes (every field, declaration
  // order), as a literal: create copies by reflection, per route, and a
  // table has thousands. test/unit/routes-codec.test.ts holds the two equal.
  return {
    $typeName: RouteSchema.typeName,
    dest: r.dst,
    gateway: r.gateway ?? "",
    device: r.dev,
    source: r.prefsrc ?? "",
    scope: r.scope,
    family: protoFamily(r.family),
    flags: r.onlink ? RTNH_F_ONLINK : 0,
    mtu: r.mtu,
  };
}

/** A link as the kernel has it: lower-case MAC, every address with its true family. */
export function linkToProto(l: Link, devicePath = ""): Interface {
  return create(InterfaceSchema, {
    device: l.name,
    name: l.name,
    IPAddresses: l.addresses.map(addressToProto),
    mtu: BigInt(l.mtu),
    hwAddr: l.mac,
    devicePath,
    type: l.kind,
    rawFlags: rawFlags(l.flags),
  });
}
