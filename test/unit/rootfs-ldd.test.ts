import { describe, expect, it } from "vitest";
import { parseLdd } from "../../rootfs/ldd";

describe("parseLdd", () => {
  it("lists libraries and the loader, skipping the vDSO", () => {
    const out = `	linux-vdso.so.1 (0x00007ffd4f1d6000)
	libbpf.so.1 => /lib/x86_64-linux-gnu/libbpf.so.1 (0x00007f369c498000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f369c26f000)
	/lib64/ld-linux-x86-64.so.2 (0x00007f369c5fd000)
`;
    expect(parseLdd(out)).toEqual({
      paths: [
        "/lib/x86_64-linux-gnu/libbpf.so.1",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
      ],
      isStatic: false,
    });
  });

  it("recognises a static executable", () => {
    expect(parseLdd("	not a dynamic executable\n")).toEqual({ paths: [], isStatic: true });
    expect(parseLdd("	statically linked\n")).toEqual({ paths: [], isStatic: true });
  });

  it("skips an old-style vDSO line with no file", () => {
    expect(parseLdd("	linux-vdso.so.1 =>  (0x00007fff)\n").paths).toEqual([]);
  });

  it("fails on a missing library, naming it", () => {
    expect(() => parseLdd("	libfoo.so.3 => not found\n")).toThrow("ldd: libfoo.so.3 not found");
  });
});
