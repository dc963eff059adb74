/** parseFlags and the human tables of netagentctl. */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { InterfaceSchema, IPFamily, RouteSchema } from "../../../src/gen/types_pb";
import { parseFlags, UsageError } from "../../../src/host/commands/common";
import { interfacesTable, renderTable, routesTable } from "../../../src/host/print/table";

describe("parseFlags", () => {
  const spec = { "--file": "value", "--dry-run": "bool" } as const;
  it("takes --flag value, --flag=value and booleans", () => {
    expect(parseFlags(["--file", "a.json", "--dry-run"], spec)).toEqual({
      "--file": "a.json",
      "--dry-run": true,
    });
    expect(parseFlags(["--file=b=c.json"], spec)).toEqual({ "--file": "b=c.json" });
  });
  it.each<[string[], RegExp]>([
    [["--nope"], /unknown option --nope/],
    [["stray"], /unexpected argument "stray"/],
    // Only the spec's own flags: not what every object inherits.
    [["toString"], /unexpected argument "toString"/],
    [["constructor"], /unexpected argument "constructor"/],
    [["__proto__"], /unexpected argument "__proto__"/],
    [["--file"], /--file needs a value/],
    [["--file="], /--file needs a value/],
    [["--dry-run=1"], /--dry-run takes no value/],
    [["--file", "a", "--file", "b"], /--file given twice/],
  ])("%j is a usage error", (args, message) => {
    expect(() => parseFlags(args, spec)).toThrow(UsageError);
    expect(() => parseFlags(args, spec)).toThrow(message);
  });
});

describe("tables", () => {
  it("aligns columns and trims trailing blanks", () => {
    expect(
      renderTable(
        ["A", "BB"],
        [
          ["long", ""],
          ["x", "y"],
        ],
      ),
    ).toBe("A     BB\nlong\nx     y\n");
  });
  it("interfaces and routes as a person reads them", () => {
    const i = create(InterfaceSchema, {
      name: "eth0",
      hwAddr: "02:00:00:00:00:01",
      mtu: 1500n,
      rawFlags: 0x1 | 0x80,
      IPAddresses: [
        { address: "10.0.0.2", mask: "24" },
        { family: IPFamily.v6, address: "fe80::1", mask: "64" },
      ],
    });
    expect(interfacesTable([i])).toBe(
      "NAME  MAC                MTU   FLAGS     ADDRESSES\neth0  02:00:00:00:00:01  1500  up,noarp  10.0.0.2/24 fe80::1/64\n",
    );
    const text = routesTable([
      create(RouteSchema, { dest: "0.0.0.0/0", gateway: "10.0.0.1", device: "eth0" }),
      create(RouteSchema, {
        dest: "10.0.0.1/32",
        device: "eth0",
        source: "10.0.0.2",
        scope: 253,
        flags: 4,
        mtu: 1400,
      }),
      create(RouteSchema, {
        dest: "::/0",
        gateway: "fe80::1",
        device: "eth0",
        family: IPFamily.v6,
      }),
    ]);
    expect(text.split("\n")).toEqual([
      "FAMILY  DESTINATION  GATEWAY   DEVICE  SOURCE    SCOPE  FLAGS   MTU",
      "v4      default      10.0.0.1  eth0",
      "v4      10.0.0.1/32            eth0    10.0.0.2  link   onlink  1400",
      "v6      default      fe80::1   eth0",
      "",
    ]);
  });
});
