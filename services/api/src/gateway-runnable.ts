import type { Runnable } from "@choreo/kit/lifecycle";

/** What the runnable needs of the HTTP gateway. */
interface Listener {
  listen(opts: {
    host: string;
    httpPort?: number;
    httpsPort?: number;
    tls?: { cert: string; key: string; clientCa?: string };
  }): Promise<{ httpPort?: number; httpsPort?: number }>;
  close(): Promise<void>;
}

/** Runs the HTTP gateway until the signal aborts, then closes it (ending open watches). */
export function gatewayRunnable(
  gateway: Listener,
  opts: { host: string; httpPort?: number; httpsPort?: number; tls?: { cert: string; key: string; clientCa?: string } },
  onListening?: (ports: { httpPort?: number; httpsPort?: number }) => void,
): Runnable {
  return {
    name: "http-gateway",
    async start(signal) {
      const ports = await gateway.listen(opts);
      onListening?.(ports);
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
      await gateway.close();
    },
  };
}
