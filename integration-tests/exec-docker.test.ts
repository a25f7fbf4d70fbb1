// test-tier: servers
// pods/exec with kubectl 1.32 against docker pods: kubectl ──WebSocket
// (v5.channel.k8s.io)──▶ api ──NATS (bus stream)──▶ node agent ──▶ docker exec.
import { execScenarios } from "./support/exec-scenarios.js";

execScenarios("docker");
