#!/usr/bin/env bash
# The test command: installs what the tests need on a fresh Debian 12 machine
# (as root), checks types and style, builds, runs every test, and then the
# main job of the README (scripts/demo.sh --quiet: a guest under QEMU, a CNI ptp
# pod synced into it), which counts as one test that passes only when its
# verdict is EQUAL. Ends with a line "N passed, N failed" and one "FAILED"
# line per failed test; the exit status is non-zero when any test or the
# main job failed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/debian-packages.sh

npm ci --no-audit --no-fund
npm run gen
npx tsc --noEmit -p .
# bench/ has its own tsconfig (it reads test/ helpers too): a helper changed under it fails here.
npx tsc --noEmit -p bench
# Lint and format (biome.json): also no .ts file (src/gen aside) over 400
# lines and no function over 100, with no file exempt.
npx biome check .
# No test waits by sleeping: every sleep in test/ says in a comment why it is
# no wait (`not a wait: ...`), else the run fails here (test/support/check-sleeps.ts).
npx bun test/support/check-sleeps.ts
# Which part of src/ may import which (.dependency-cruiser.cjs); a violation fails here.
npm run deps
# No copied block in src/ (src/gen aside): jscpd at its default minimum size
# (.jscpd.json); any clone fails here.
npm run clones
# Nothing unused: every .ts in src/ (src/gen aside) is reached from an entry
# (the agent, netagentctl, the client library, build/, scripts/, rootfs/,
# bench/, test/: knip.json), and every export of one (values, types, enum
# and namespace members; nothing exported under two names) is imported by
# another file; the entries' own exports (the client library's surface)
# count as used. knip lists anything else and fails here.
npm run unused
npm run build

mkdir -p dist
rm -f dist/vitest-*.json
# The VM end-to-end test runs on its own after the rest: a TCG guest is
# slow enough without sharing the two cores with namespace tests, and it
# waits on a busy guest. One guest at a time. guest-arm64 boots the arm64
# guest once (qemu-system-aarch64, TCG), building dist/guest-arm64 first.
VM_TESTS="test/vm/guest.test.ts test/vm/guest-crash.test.ts test/vm/guest-iptables.test.ts test/vm/guest-state.test.ts test/vm/watch-hotplug.test.ts test/vm/guest-arm64.test.ts test/vm/front-guest.test.ts test/vm/follow-guest.test.ts"
# Both guest images are built here, once, not inside the first VM test's
# hook: at load 20 the x86 build alone outlasted a 120 s hook.
npx bun rootfs/build.ts --arch x86_64
npx bun rootfs/build.ts --arch arm64
status=0
# shellcheck disable=SC2086 # several paths, split on purpose
npx bun --bun vitest run $(printf -- '--exclude %s ' $VM_TESTS) \
  --reporter=default --reporter=json --outputFile=dist/vitest-main.json || status=$?
# shellcheck disable=SC2086
npx bun --bun vitest run --no-file-parallelism $VM_TESTS \
  --reporter=default --reporter=json --outputFile=dist/vitest-vm.json || status=$?

# The main job, exactly as a user runs it (quietly): a main job that breaks
# on a fresh machine cannot land.
echo "== main job: bash scripts/demo.sh --quiet"
demo_start=$SECONDS
demo=passed
bash scripts/demo.sh --quiet 2>&1 | tee dist/demo.log || demo=failed
grep -q "^verdict: EQUAL" dist/demo.log || demo=failed
echo "== main job: $demo ($((SECONDS - demo_start)) s; log in dist/demo.log)"
[[ $demo == passed ]] || status=1

DEMO=$demo node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  if (process.env.DEMO === "passed") passed++; else failed++;
  for (const f of ["dist/vitest-main.json", "dist/vitest-vm.json"]) {
    if (!fs.existsSync(f)) { failed++; console.error(`no report ${f}`); continue; }
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    passed += r.numPassedTests; failed += r.numFailedTests;
    skipped += r.numPendingTests + r.numTodoTests;
    // A file that failed with no failed test (a hook or an import threw, and
    // its tests were skipped) is one failure, not a quiet skip.
    for (const file of r.testResults) {
      if (file.status === "failed" && !file.assertionResults.some((t) => t.status === "failed")) failed++;
    }
  }
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  // The failures by name, last, where a log that keeps only its tail shows them.
  for (const f of ["dist/vitest-main.json", "dist/vitest-vm.json"]) {
    if (!fs.existsSync(f)) continue;
    for (const file of JSON.parse(fs.readFileSync(f, "utf8")).testResults) {
      for (const t of file.assertionResults) {
        if (t.status !== "failed") continue;
        const why = (t.failureMessages[0] ?? "").split("\n")[0].slice(0, 300);
        console.log(`FAILED ${file.name.replace(process.cwd() + "/", "")} > ${t.fullName}: ${why}`);
      }
      if (file.status === "failed" && !file.assertionResults.some((t) => t.status === "failed")) {
        const why = (file.message ?? "").split("\n")[0].slice(0, 300);
        console.log(`FAILED ${file.name.replace(process.cwd() + "/", "")} (the file, before its tests): ${why}`);
      }
    }
  }
'
exit "$status"
