// test-tier: servers
// Real pods on the process runtime: see support/real-pods-scenarios.ts.
import { realPodScenarios } from "./support/real-pods-scenarios.js";

realPodScenarios("process");
