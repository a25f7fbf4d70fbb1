// Forwards every change of the event stream to a URL as an HTTP POST
// (JSON body; headers Choreo-Revision and Choreo-Event-Type), retrying until
// the receiver answers 2xx — the event is acked only then.
//
//   CHOREO_NATS_URL=nats://127.0.0.1:4222 CHOREO_NATS_CREDENTIALS=subscriber.creds \
//     node --import tsx examples/webhook-forwarder/main.ts http://127.0.0.1:8080/hook [--resource pods] [--durable NAME]
//
// At-least-once: after a crash the change being forwarded is POSTed again;
// receivers drop a Choreo-Revision they have already seen.
import { parseArgs } from "node:util";
import { connectClient } from "@choreo/client";
import { messageToKubeJson } from "@choreo/kit/kube-json";

async function post(url: string, body: string, revision: number, type: string, signal: AbortSignal): Promise<void> {
  for (let delay = 100; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      const res = await fetch(url, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "choreo-revision": String(revision), "choreo-event-type": type },
        signal,
      });
      await res.arrayBuffer();
      if (res.ok) return;
      console.error(JSON.stringify({ revision, status: res.status, msg: "webhook refused; retrying" }));
    } catch (err) {
      if (signal.aborted) throw err;
      console.error(JSON.stringify({ revision, err: String(err), msg: "webhook unreachable; retrying" }));
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { resource: { type: "string" }, durable: { type: "string" }, since: { type: "string" } },
    allowPositionals: true,
  });
  const url = positionals[0];
  if (!url) throw new Error("usage: main.ts URL [--resource pods] [--durable NAME] [--since REV]");
  const ac = new AbortController();
  process.once("SIGTERM", () => ac.abort());
  process.once("SIGINT", () => ac.abort());
  const client = await connectClient({ name: "webhook-forwarder" });
  console.error(JSON.stringify({ msg: "connected" }));
  try {
    const events = client.subscribe({
      ...(values.resource ? { resource: values.resource } : {}),
      durable: values.durable ?? "webhook-forwarder",
      fromRevision: Number(values.since ?? "0"),
      signal: ac.signal,
    });
    for await (const ev of events) {
      const meta = ev.object.metadata;
      const body = JSON.stringify({
        revision: ev.revision,
        type: ev.type,
        kind: ev.kind.kind,
        namespace: meta?.namespace ?? "",
        name: meta?.name ?? "",
        object: messageToKubeJson(ev.kind.protoType, ev.object),
      });
      await post(url, body, ev.revision, ev.type, ac.signal);
    }
  } finally {
    await client.close();
  }
}

await main();
