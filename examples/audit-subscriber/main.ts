// An audit log of the cluster: every change of the event stream appended to a
// JSON-lines file, one line per revision, in order — surviving kill -9.
//
//   CHOREO_NATS_URL=nats://127.0.0.1:4222 CHOREO_NATS_CREDENTIALS=subscriber.creds \
//     node --import tsx examples/audit-subscriber/main.ts audit.jsonl [durable-name]
//
// How it loses nothing and writes nothing twice: its position is a durable
// consumer (acked once a line is written: at-least-once), and the file is the
// truth — at start it reads the last complete line's revision, cuts a torn
// last line (killed mid-write), and drops events at or below that revision.
import { closeSync, existsSync, openSync, readFileSync, truncateSync, writeSync } from "node:fs";
import { connectClient } from "@choreo/client";
import { messageToKubeJson } from "@choreo/kit/kube-json";

/** The revision of the file's last complete line (0: none); a torn last line is cut off. */
function lastRevision(file: string): number {
  if (!existsSync(file)) return 0;
  const text = readFileSync(file, "utf8");
  const end = text.lastIndexOf("\n") + 1;
  if (end < text.length) truncateSync(file, Buffer.byteLength(text.slice(0, end)));
  const lines = text.slice(0, end).trimEnd().split("\n").filter(Boolean);
  const last = lines.at(-1);
  return last ? (JSON.parse(last) as { revision: number }).revision : 0;
}

async function main(): Promise<void> {
  const [file, durable = "audit-subscriber"] = process.argv.slice(2);
  if (!file) throw new Error("usage: main.ts FILE [DURABLE]");
  let last = lastRevision(file);
  const fd = openSync(file, "a");
  const ac = new AbortController();
  process.once("SIGTERM", () => ac.abort());
  process.once("SIGINT", () => ac.abort());
  const client = await connectClient({ name: "audit-subscriber" });
  console.error(JSON.stringify({ msg: "connected" }));
  try {
    for await (const ev of client.subscribe({ durable, fromRevision: last, signal: ac.signal })) {
      if (ev.revision <= last) continue; // delivered again after a crash: already in the file
      const meta = ev.object.metadata;
      const line = {
        revision: ev.revision,
        type: ev.type,
        kind: ev.kind.kind,
        namespace: meta?.namespace ?? "",
        name: meta?.name ?? "",
        object: messageToKubeJson(ev.kind.protoType, ev.object),
      };
      // One write per line: a kill -9 leaves whole lines (the page cache keeps them) or one torn last line, cut at the next start.
      writeSync(fd, `${JSON.stringify(line)}\n`);
      last = ev.revision;
    }
  } finally {
    closeSync(fd);
    await client.close();
  }
}

await main();
