// test-tier: servers
// kubectl debug on process-runtime nodes: see support/debug-scenarios.ts.
import { debugScenarios } from "./support/debug-scenarios.js";

debugScenarios("process");
