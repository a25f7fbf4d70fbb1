// test-tier: servers
// pods/portforward with kubectl 1.32 (SPDY in a WebSocket) and 1.20 (SPDY/3.1) against docker pods:
// kubectl ──▶ api (SPDY streams) ──NATS (bus stream)──▶ node agent ──TCP──▶ the pod's IP.
import { portForwardScenarios } from "./support/port-forward-scenarios.js";

portForwardScenarios("docker");
