// Which requests are WebSocket opening handshakes: a GET with `Upgrade: websocket` and a
// Connection field naming `upgrade` (RFC 6455 §4.2.1 items 3 and 4). Upgrade is hop-by-hop and
// means nothing unless Connection names it (RFC 9110 §7.6.1, §7.8), so without that the request
// is an ordinary GET and its Upgrade field is dropped: nginx likewise answers such a request
// from the pod. Shared by the proxy, which relays handshakes through its own WebSocket client
// (proxy/upstream/websocket.ts), the HTTP/2 front's HTTP/1.1 side, and the forwarding kinds,
// which leave such a request's Connection field to that client. Any other Upgrade (`h2c`, or
// on a method other than GET) is not one: the proxy forwards it as a plain request.

export function isWebSocketUpgrade(req: Request): boolean {
  const up = req.headers.get("upgrade");
  if (req.method !== "GET" || up === null || up.toLowerCase() !== "websocket") return false;
  const conn = req.headers.get("connection");
  return conn !== null && conn.split(",").some((t) => t.trim().toLowerCase() === "upgrade");
}
