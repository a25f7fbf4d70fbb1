// test-tier: servers
// pods/exec with kubectl 1.32 against process-runtime pods: kubectl
// ──WebSocket──▶ api ──NATS──▶ node agent ──▶ choreo-exec join (the pod's namespaces and root).
import { execScenarios } from "./support/exec-scenarios.js";

execScenarios("process");
