#!/usr/bin/env node
// The `choreo` command: registers tsx (TypeScript without a build step), then runs src/main.ts.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/main.ts");
process.exitCode = await main(process.argv.slice(2));
