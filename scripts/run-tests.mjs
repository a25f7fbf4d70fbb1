// Runs the test files (node:test through tsx) and prints "N passed, N failed".
// Usage: node scripts/run-tests.mjs [dir ...]   (default: services integration-tests)
import { spawn } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";

const roots = process.argv.slice(2).length ? process.argv.slice(2) : ["services", "integration-tests"];
const files = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith(".test.ts")) files.push(p);
  }
}
for (const r of roots) walk(r);
files.sort();

const concurrency = process.env.CHOREO_TEST_CONCURRENCY ?? "2";
const child = spawn(
  process.execPath,
  ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`, `--test-timeout=${process.env.CHOREO_TEST_TIMEOUT_MS ?? 300000}`, "--test-reporter=spec", "--test-reporter-destination=stdout", "--test-reporter=tap", "--test-reporter-destination=.test-results.tap", ...files],
  { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, CHOREO_LOG_LEVEL: process.env.CHOREO_LOG_LEVEL ?? "warn" } },
);
child.on("exit", async (code) => {
  const { readFileSync, rmSync } = await import("node:fs");
  let passed = 0;
  let failed = 0;
  try {
    const tap = readFileSync(".test-results.tap", "utf8");
    passed = Number(/^# pass (\d+)/m.exec(tap)?.[1] ?? 0);
    failed = Number(/^# fail (\d+)/m.exec(tap)?.[1] ?? 0);
    rmSync(".test-results.tap", { force: true });
  } catch {
    // no TAP file: the runner itself failed
  }
  console.log(`\n${passed} passed, ${failed} failed (${files.length} files)`);
  process.exit(code ?? 1);
});
