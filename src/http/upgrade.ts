// Which requests are WebSocket opening handshakes (RFC 6455 §4.1: a GET with `Upgrade:
// websocket`). Shared by the proxy, which relays those through its own WebSocket client
// (proxy/upstream/websocket.ts), the HTTP/2 front's HTTP/1.1 side, and the forwarding kinds,
// which leave such a request's Connection field to that client. Any other Upgrade (`h2c`, or
// on a method other than GET) is not one: the proxy forwards it as a plain request.

export function isWebSocketUpgrade(req: Request): boolean {
  const up = req.headers.get("upgrade");
  return req.method === "GET" && up !== null && up.toLowerCase() === "websocket";
}
