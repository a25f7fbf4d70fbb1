// test-tier: servers
// kubectl debug on docker nodes: see support/debug-scenarios.ts.
import { debugScenarios } from "./support/debug-scenarios.js";

debugScenarios("docker");
