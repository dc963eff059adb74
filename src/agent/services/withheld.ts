/**
 * What the changing calls answer when the policy refuses reads (`reads:
 * false`): nothing read from the guest, or a host would learn by a change
 * what it may not read (the kernel's link-local address, a link's name and
 * MTU, the other links, the kernel's routes). Built from the validated
 * request alone, so it costs no read.
 *
 * UpdateInterface answers the interface as the call set it: the Kata agent
 * answers its request so always, and the Kata runtime only logs the
 * answer. UpdateRoutes answers the routes the call set, as Kata's Go agent
 * did (the runtime logs this answer too; kata-network-service.ts). Apply
 * answers neither a state nor a plan (state-service.ts): both are made of
 * the guest as read.
 */
import { create } from "@bufbuild/protobuf";
import { type Interface, InterfaceSchema } from "../../gen/types_pb";
import { IFF } from "../../net/vocabulary/links";
import { addressToProto } from "../../wire/kata-map";
import type { InterfaceSpec } from "../validate/validate-interface-neighbors";

/**
 * UpdateInterface's answer without reads: the request as applied (its
 * name and MTU, "" and 0 when it keeps the guest's; only the NOARP bit of
 * its flags, the one the agent applies; IPv6 addresses left out where the
 * guest has IPv6 disabled). Not the kernel-made link-local address.
 */
export function interfaceAsAsked(spec: InterfaceSpec): Interface {
  return create(InterfaceSchema, {
    device: spec.name,
    name: spec.name,
    IPAddresses: spec.addresses.map(addressToProto),
    mtu: BigInt(spec.mtu),
    hwAddr: spec.mac,
    devicePath: spec.devicePath,
    rawFlags: spec.noarp ? IFF.NOARP : 0,
  });
}
