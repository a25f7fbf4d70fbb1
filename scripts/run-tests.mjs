// Runs the test files (node:test through tsx) and prints "N passed, N failed".
// Usage: node scripts/run-tests.mjs [--tier fast|servers] [dir|file ...]
//        (default dirs: services integration-tests scripts; default tier: all)
//
// Test tiers. A test file whose FIRST LINE is exactly
//
//     // test-tier: servers
//
// needs something outside the process: nats-server, redis-server, Docker,
// network namespaces, iptables, kubectl, the process runtime's sandbox, a
// whole cluster. Every other test file is in the fast tier: hermetic, no
// server, no root. `grep -rlx "// test-tier: servers" services integration-tests scripts`
// lists the server tier. A test converted to in-memory fakes drops the line.
//
// The fast tier is enforced, not trusted: it runs with CHOREO_TEST_TIER=fast,
// under which @choreo/kit/process refuses to start nats-server or
// redis-server (and so the api's test stack and the integration clusters),
// and with DOCKER_HOST pointing nowhere, so a Docker call fails.
import { spawn } from "node:child_process";
import { openSync, readSync, closeSync, readdirSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";

const SERVERS_PRAGMA = "// test-tier: servers";

const args = process.argv.slice(2);
let tier = "all";
const tierAt = args.indexOf("--tier");
if (tierAt >= 0) {
  tier = args[tierAt + 1] ?? "";
  args.splice(tierAt, 2);
}
if (!["all", "fast", "servers"].includes(tier)) {
  console.error(`unknown tier "${tier}": fast, servers or (default) all`);
  process.exit(2);
}
const roots = args.length ? args : ["services", "integration-tests", "scripts"];

/** True when the file's first line is the servers pragma. */
function needsServers(file) {
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(SERVERS_PRAGMA.length + 2);
  const n = readSync(fd, buf, 0, buf.length, 0);
  closeSync(fd);
  const first = buf.subarray(0, n).toString("utf8").split(/\r?\n/)[0];
  return first === SERVERS_PRAGMA;
}

const files = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith(".test.ts")) files.push(p);
  }
}
for (const r of roots) {
  if (statSync(r).isDirectory()) walk(r);
  else files.push(r); // one file, named: npm run test:integration -- integration-tests/x.test.ts
}
const selected = files.filter((f) => tier === "all" || (tier === "servers") === needsServers(f)).sort();

const env = { ...process.env, CHOREO_LOG_LEVEL: process.env.CHOREO_LOG_LEVEL ?? "warn" };
if (tier === "fast") {
  env.CHOREO_TEST_TIER = "fast";
  env.DOCKER_HOST = "unix:///nonexistent/choreo-fast-tier-has-no-docker.sock";
}
// Fast files are short and mostly wait on tsx's start and on timers: two
// per core, at least 4 (62 s against 80 s at 2, on a loaded 2-core machine).
const concurrency = process.env.CHOREO_TEST_CONCURRENCY ?? (tier === "fast" ? String(Math.max(4, 2 * availableParallelism())) : "2");
const tap = `.test-results.${process.pid}.tap`;
const started = Date.now();
const child = spawn(
  process.execPath,
  [
    "--import",
    "tsx",
    "--test",
    `--test-concurrency=${concurrency}`,
    // A whole file's limit (each file is one test of this run): the compose bring-up file builds its images and
    // needs 5-11 min on a loaded machine (ci-38 cut at 300 s, ci-39 at 600 s, each after its cases had passed);
    // a hung file costs 20 min, not the whole run.
    `--test-timeout=${process.env.CHOREO_TEST_TIMEOUT_MS ?? 1200000}`,
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=tap",
    `--test-reporter-destination=${tap}`,
    ...selected,
  ],
  { stdio: ["ignore", "inherit", "inherit"], env },
);
child.on("exit", async (code) => {
  const { readFileSync, rmSync } = await import("node:fs");
  let passed = 0;
  let failed = 0;
  try {
    const out = readFileSync(tap, "utf8");
    passed = Number(/^# pass (\d+)/m.exec(out)?.[1] ?? 0);
    failed = Number(/^# fail (\d+)/m.exec(out)?.[1] ?? 0);
    rmSync(tap, { force: true });
  } catch {
    // no TAP file: the runner itself failed
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`\n${passed} passed, ${failed} failed (${selected.length} files, tier ${tier}, ${seconds} s)`);
  process.exit(code ?? 1);
});
