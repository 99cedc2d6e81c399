// A plain TCP forwarder, as `ssh -L` is: the browser talks to its port, bytes go to the target.
import { once } from "node:events";
import { connect, createServer } from "node:net";

/** Forwards 127.0.0.1:<returned port> to `targetPort`; close() stops it and its connections. */
export async function forward(targetPort) {
  const sockets = new Set();
  const server = createServer((client) => {
    const upstream = connect(targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  let bytes = 0;
  server.on("connection", (c) => c.on("data", (d) => (bytes += d.length)));
  return {
    port: server.address().port,
    connections: () => sockets.size,
    bytesFromBrowser: () => bytes,
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, "close");
    },
  };
}
