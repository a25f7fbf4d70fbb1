// test-tier: servers
// Init containers on real nodes, process runtime: see support/init-container-scenarios.ts.
import { initContainerScenarios } from "./support/init-container-scenarios.js";

initContainerScenarios("process");
