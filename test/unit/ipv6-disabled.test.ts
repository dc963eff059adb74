import { mkdirSync, writeFileSync } from "node:fs";
import { afterEach, expect, it } from "vitest";
import { ipv6Disabled } from "../../src/net/sysctl/sysctl";
import { type TempDir, tempDir } from "../helpers/tmp";

const dirs: TempDir[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) d.remove();
});

/** A fake /proc/sys/net/ipv6/conf with `all` and `default` set as given (undefined: no file). */
function conf(all?: string, def?: string): string {
  const dir = tempDir("netagent-v6conf-");
  dirs.push(dir);
  for (const [name, value] of [
    ["all", all],
    ["default", def],
  ] as const) {
    mkdirSync(dir.join(name));
    if (value !== undefined) writeFileSync(dir.join(`${name}/disable_ipv6`), `${value}\n`);
  }
  return dir.path;
}

it("says IPv6 is disabled only when both all and default say 1, or there is no IPv6", () => {
  expect(ipv6Disabled(conf("1", "1"))).toBe(true);
  expect(ipv6Disabled(conf("1", "0"))).toBe(false);
  expect(ipv6Disabled(conf("0", "1"))).toBe(false);
  expect(ipv6Disabled(conf("0", "0"))).toBe(false);
  expect(ipv6Disabled(conf())).toBe(true);
});
