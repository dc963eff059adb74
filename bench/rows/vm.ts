/**
 * Row 9: the guest in a real VM, image mode (read-only erofs root on
 * virtio-pmem with DAX, dist/guest/boot-image.json) against initramfs mode
 * (boot-initramfs.json), booted alternately A B / B A in one run. Each boot:
 * QEMU start -> first answered Check, then the guest synced to a real CNI
 * ptp pod wired before QEMU started (QEMU start -> diff EQUAL: pod network
 * ready, lib/pod-ready.ts), then the agent idle for a while, then
 * the guest's /proc/meminfo and the agent's status read through the serial
 * console, and QEMU's Pss on the host. Then two VMs of each mode side by
 * side from the same files (no pod): the sum of their Pss against twice one VM's.
 * The rows say whether the guests ran under KVM or TCG (the runner's probes).
 * Under TCG a boot takes tens of seconds: runnable alone with
 * `bun bench/run.ts --rows 9` (or `npm run bench -- --rows 9`).
 */
import { type BootSpec, loadBootSpec } from "../../src/host/vm/boot-spec";
import { ensureGuestImage } from "../../test/vm/image";
import { type GuestFigures, measureGuests } from "../lib/guest-probe";
import type { Row } from "../lib/row";
import { median, summarize } from "../lib/stats";

const MODES = ["image", "initramfs"] as const;
type Mode = (typeof MODES)[number];

export interface VmRowOptions {
  /** Single-VM boots per mode (medians over these). */
  boots: number;
  /** Side-by-side pairs per mode. */
  pairs: number;
  /** How long the agent sits idle before the figures are read. */
  idleMs: number;
  /** The guest directory (default dist/guest, built when missing; another: as it is). */
  guest?: string;
  /** The netagentctl that syncs the pod (default dist/netagentctl; another build's for its guest). */
  ctl?: string;
}

const mib = (kib: number) => kib / 1024;
/** The figures that are numbers. */
type Figure = {
  [K in keyof GuestFigures]: GuestFigures[K] extends number ? K : never;
}[keyof GuestFigures];

/** measureGuests, tried again (twice at most) when a boot fails: one lost boot must not lose the row. */
async function measure(
  boot: BootSpec,
  count: number,
  idleMs: number,
  withPod = false,
  ctl?: string,
): Promise<GuestFigures[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await measureGuests(boot, count, idleMs, withPod, ctl);
    } catch (err) {
      const line = String((err as Error).message).split("\n")[0];
      process.stderr.write(`bench: vm boot failed (attempt ${attempt}): ${line}\n`);
      if (attempt >= 3) throw err;
    }
  }
}

/**
 * The single boots (alternating the modes' order) and the pairs of VMs
 * side by side, each mode's figures and pair Pss sums.
 */
async function measureBoots(
  boot: Record<Mode, BootSpec>,
  opts: VmRowOptions,
): Promise<{ single: Record<Mode, GuestFigures[]>; pairSum: Record<Mode, number[]> }> {
  const single: Record<Mode, GuestFigures[]> = { image: [], initramfs: [] };
  for (let i = 0; i < opts.boots; i++) {
    for (const mode of i % 2 === 0 ? MODES : [...MODES].reverse()) {
      const [f] = await measure(boot[mode], 1, opts.idleMs, true, opts.ctl);
      single[mode].push(f as GuestFigures);
      process.stderr.write(`bench: vm ${mode} boot ${i + 1}: ${JSON.stringify(f)}\n`);
    }
  }
  const pairSum: Record<Mode, number[]> = { image: [], initramfs: [] };
  for (let i = 0; i < opts.pairs; i++) {
    for (const mode of i % 2 === 0 ? MODES : [...MODES].reverse()) {
      const two = await measure(boot[mode], 2, opts.idleMs);
      pairSum[mode].push(two.reduce((s, f) => s + f.qemuPssKiB, 0));
      process.stderr.write(
        `bench: vm ${mode} pair ${i + 1}: Pss ${two.map((f) => f.qemuPssKiB).join(" + ")} kB\n`,
      );
    }
  }
  return { single, pairSum };
}

/** The row of two VMs of `mode` side by side against twice one VM's Pss. */
function pairRowOf(
  mode: Mode,
  id: string,
  pairSum: Record<Mode, number[]>,
  onePss: Record<Mode, number>,
  commands: string[],
): Row {
  const sums = pairSum[mode].map(mib);
  const ratio = median(sums) / ((2 * onePss[mode]) / 1024);
  return {
    id,
    what: `host Pss of two VMs side by side, ${mode} mode, vs twice one VM's`,
    unit: "MiB",
    ours: median(sums),
    reference: (2 * onePss[mode]) / 1024,
    referenceWhat: `2 x one ${mode} VM`,
    ratio,
    ratioNote: "median pair sum / (2 x median single)",
    oursStats: summarize(sums),
    goal: mode === "image" ? "clearly < 1 (<= 0.9)" : "-",
    ...(mode === "image" ? { met: ratio <= 0.9 } : {}),
    notes: [
      "QEMU's own binary and libraries are shared in both modes; the image's own share is row 9g2 (its resident pages, one copy in the host page cache). Under TCG most of a QEMU's Pss is guest RAM touched and the translation cache, neither shared.",
    ],
    commands,
  };
}

/** Two image-mode VMs' host Pss against two initramfs-mode VMs'. */
function pairsVsRow(pairSum: Record<Mode, number[]>, commands: string[]): Row {
  return {
    id: "9h",
    what: "host Pss of two VMs: image mode vs initramfs mode",
    unit: "MiB",
    ours: median(pairSum.image.map(mib)),
    reference: median(pairSum.initramfs.map(mib)),
    referenceWhat: "two initramfs VMs",
    ratio: median(pairSum.image) / median(pairSum.initramfs),
    oursStats: summarize(pairSum.image.map(mib)),
    referenceStats: summarize(pairSum.initramfs.map(mib)),
    commands,
  };
}

export async function vmRows(opts: VmRowOptions): Promise<Row[]> {
  const guest = opts.guest ?? "dist/guest";
  if (opts.guest === undefined) ensureGuestImage();
  const boot = {
    image: loadBootSpec(`${guest}/boot-image.json`),
    initramfs: loadBootSpec(`${guest}/boot-initramfs.json`),
  };
  const { single, pairSum } = await measureBoots(boot, opts);

  const of = (mode: Mode, k: Figure) => single[mode].map((f) => f[k]);
  const command = `bun bench/run.ts --rows 9 --vm-boots ${opts.boots} --vm-pairs ${opts.pairs} --vm-idle-ms ${opts.idleMs}${opts.guest === undefined ? "" : ` --vm-guest ${opts.guest}`}${opts.ctl === undefined ? "" : ` --vm-ctl ${opts.ctl}`}`;
  const base = {
    referenceWhat: "initramfs mode",
    commands: [
      command,
      "by hand: npm run vm -- --mode image --debug-console --console, then cat /proc/meminfo; grep Rss /proc/$(pidof netagent)/status (and --mode initramfs)",
    ],
  };
  /** A row comparing image mode (ours) with initramfs mode, medians of the single boots. */
  const compare = (
    id: string,
    what: string,
    key: Figure,
    unit: string,
    scale: (x: number) => number,
    goal?: { text: string; met: (ratio: number) => boolean },
  ): Row => {
    const a = of("image", key).map(scale);
    const b = of("initramfs", key).map(scale);
    const ratio = median(a) / median(b);
    return {
      id,
      what,
      unit,
      ours: median(a),
      reference: median(b),
      ratio,
      ratioNote: "median(image) / median(initramfs)",
      oursStats: summarize(a),
      referenceStats: summarize(b),
      ...(goal ? { goal: goal.text, met: goal.met(ratio) } : {}),
      ...base,
    };
  };
  const memTotal = `MemTotal image ${of("image", "memTotalKiB").join("/")} kB, initramfs ${of("initramfs", "memTotalKiB").join("/")} kB (512 MiB guests; image mode boots with swiotlb=noforce)`;
  const kvm = [...single.image, ...single.initramfs].map((f) => f.kvm);
  const accelNote = kvm.every(Boolean)
    ? "accelerator: KVM (every boot)"
    : kvm.some(Boolean)
      ? `accelerator: KVM in ${kvm.filter(Boolean).length} of ${kvm.length} boots, else TCG`
      : "accelerator: TCG -cpu max (no working KVM on this host: the runner's probes)";
  const firstCheckRatios = single.image.map(
    (f, i) => f.firstCheckMs / (single.initramfs[i] as GuestFigures).firstCheckMs,
  );
  const onePss = {
    image: median(of("image", "qemuPssKiB")),
    initramfs: median(of("initramfs", "qemuPssKiB")),
  };
  const pairRow = (mode: Mode, id: string) => pairRowOf(mode, id, pairSum, onePss, base.commands);
  const pairsVs = pairsVsRow(pairSum, base.commands);
  return [
    {
      ...compare(
        "9a",
        "guest memory used after boot and the pod's sync, agent idle (MemTotal - MemAvailable)",
        "usedKiB",
        "MiB",
        mib,
        {
          text: "ratio <= 0.33",
          met: (r) => r <= 1 / 3,
        },
      ),
      notes: [memTotal],
    },
    compare("9b", "guest Shmem after boot", "shmemKiB", "MiB", mib),
    compare("9c", "guest Cached after boot", "cachedKiB", "MiB", mib),
    compare("9d", "agent RssAnon in the guest", "agentRssAnonKiB", "MiB", mib),
    compare("9e", "agent RssFile in the guest", "agentRssFileKiB", "MiB", mib),
    {
      ...compare("9f", "QEMU start -> first answered Check", "firstCheckMs", "ms", (x) => x, {
        text: "ratio <= 1.1",
        met: (r) => r <= 1.1,
      }),
      ratioStats: summarize(firstCheckRatios),
      notes: ["ratio: median(image) / median(initramfs); ratioStats: per-pair ratios", accelNote],
    },
    {
      ...compare(
        "9j",
        "QEMU start -> guest equal to a ptp pod (boot, Check, sync, diff EQUAL)",
        "podReadyMs",
        "ms",
        (x) => x,
      ),
      notes: [
        `first answered Check beside it (9f), median: image ${Math.round(median(of("image", "firstCheckMs")))} ms, initramfs ${Math.round(median(of("initramfs", "firstCheckMs")))} ms`,
        "the pod (CNI ptp, host-local) is wired before QEMU starts; sync and diff are netagentctl's",
        accelNote,
      ],
    },
    compare("9g", "host Pss of one VM (QEMU process)", "qemuPssKiB", "MiB", mib),
    {
      id: "9g2",
      what: "of which: QEMU's mapping of root.erofs, Rss (the guest's DAX pages: host page cache, shared)",
      unit: "MiB",
      ours: median(of("image", "imageRssKiB").map(mib)),
      oursStats: summarize(of("image", "imageRssKiB").map(mib)),
      notes: ["initramfs mode maps no image; its files are in each guest's RAM (9b)"],
      commands: base.commands,
    },
    pairRow("image", "9h-image"),
    pairRow("initramfs", "9h-initramfs"),
    { ...pairsVs, id: "9i" },
  ];
}
