// A TCP relay between a test's client and a server: the network between them, which the test can cut (every
// connection through it closed, the server alive) or slow (what a new connection's client sends is held back).
import net from "node:net";

export interface TcpRelay {
  /** `127.0.0.1:<port>`: where clients connect instead of the server. */
  readonly url: string;
  /** Closes every connection through the relay; new ones are taken as before. */
  cut(): void;
  /**
   * Holds back what the client of each new connection sends for this long (0: not held): a client that answers
   * the server's greeting late, as one whose event loop is blocked does.
   */
  holdClientMs: number;
  close(): void;
}

/** Starts a relay to `host:port` on a free port of 127.0.0.1. */
export async function startTcpRelay(port: number, host = "127.0.0.1"): Promise<TcpRelay> {
  const sockets = new Set<net.Socket>();
  const relay: TcpRelay = {
    url: "",
    holdClientMs: 0,
    cut: () => sockets.forEach((s) => s.destroy()),
    close: () => {
      sockets.forEach((s) => s.destroy());
      server.close();
    },
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    const hold = relay.holdClientMs;
    if (hold <= 0) client.pipe(upstream);
    else {
      // Not read meanwhile: the bytes wait in the socket and flow once piped.
      client.pause();
      setTimeout(() => client.pipe(upstream), hold);
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return Object.assign(relay, { url: `127.0.0.1:${(server.address() as net.AddressInfo).port}` });
}
