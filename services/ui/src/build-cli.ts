// `npm run build -w @choreo/ui`: builds services/ui/dist.
import { buildUi, DIST } from "./build.js";

await buildUi();
process.stdout.write(`choreo ui built in ${DIST}\n`);
