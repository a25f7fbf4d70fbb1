// npm run fuzz [-- --runs N --seed S]: the gateway fuzzer, ≥ 100,000 cases by
// default; prints progress, then cases, time and the status codes' spread.
// Exits 1 with fast-check's shrunk counterexample on the first failure.
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { formatReport, fuzzGateway } from "./gateway-fuzz.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const numRuns = arg("runs", 100_000);
const seed = arg("seed", Date.now() % 2 ** 31);
let crash: unknown;
process.on("uncaughtException", (err) => {
  crash = err;
  console.error("uncaught exception in the gateway process:", err);
  process.exitCode = 1;
});
console.log(`fuzzing the gateway: ${numRuns} cases, seed ${seed}`);
try {
  const report = await fuzzGateway({ numRuns, seed, every: 10_000, progress: (r) => console.log(`… ${formatReport(r).split("\n")[0]}`) });
  console.log(formatReport(report));
  if (crash) throw crash;
} catch (err) {
  // fast-check's report holds the whole counterexample (bodies up to MiBs): the head here, all of it in a file.
  const message = (err as Error).message;
  const file = path.join(tmpdir(), `choreo-fuzz-failure-${seed}.txt`);
  writeFileSync(file, message);
  console.error(message.length > 4000 ? `${message.slice(0, 4000)}…\n(the whole report: ${file})` : message);
  process.exitCode = 1;
}
