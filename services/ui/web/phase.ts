// A pod's phase as the grid shows it: a colour (app.css), a letter and a word,
// so that colour is never the only carrier.

export const PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown", "Terminating"] as const;
export type Phase = (typeof PHASES)[number];

export const LETTER: Record<Phase, string> = { Pending: "P", Running: "R", Succeeded: "S", Failed: "F", Unknown: "U", Terminating: "T" };

export function phaseOf(p: { metadata: { deletionTimestamp?: string }; status?: { phase?: string } }): Phase {
  if (p.metadata.deletionTimestamp) return "Terminating";
  const ph = p.status?.phase ?? "Pending";
  return (PHASES as readonly string[]).includes(ph) ? (ph as Phase) : "Unknown";
}

/** Ready, NotReady or Unknown from a node's Ready condition. */
export function nodeReadiness(n: { status?: { conditions?: { type: string; status: string }[] } }): "Ready" | "NotReady" | "Unknown" {
  const c = n.status?.conditions?.find((x) => x.type === "Ready");
  if (!c || c.status === "Unknown") return "Unknown";
  return c.status === "True" ? "Ready" : "NotReady";
}
