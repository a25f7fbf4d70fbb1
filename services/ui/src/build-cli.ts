// `npm run build -w @choreo/ui`: builds services/ui/dist; `--if-stale`: only
// when it is missing or older than a source (scripts/ensure-deps.sh).
import { buildUi, DIST, isStale } from "./build.js";

if (process.argv.includes("--if-stale") && !(await isStale())) process.exit(0);
await buildUi();
process.stdout.write(`choreo ui built in ${DIST}\n`);
