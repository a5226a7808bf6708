// Traffic and admin ports are shared only with Portico's own sockets.
//
// SO_REUSEPORT (Linux) lets any later socket of the same user that also sets it join a bound
// port, and the kernel then spreads new connections over all of them: a second Portico, or
// anything else, would silently answer part of the traffic. A bind without SO_REUSEPORT fails
// while anything at all holds the port. So a port Portico binds alone is bound without it (the
// admin port, HTTP with --workers 1), and before the first SO_REUSEPORT bind of a port (HTTPS,
// whose certificate rotation starts a second server on it; every port the workers share) the
// port is probed with a plain bind that is closed at once. The probe and the real bind run in
// one synchronous turn, so the only opening left is the few microseconds between two system
// calls (docs/design.md, "Workers").

/** Bun.serve and Bun.listen throw an Error whose `code` is the errno name. */
function isAddrInUse(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "EADDRINUSE";
}

/** Start-up cannot take a port another process holds. */
export class PortInUseError extends Error {
  constructor(flag: string, hostname: string, port: number) {
    super(`port ${port} (${flag}) on ${hostname} is in use by another process; Portico shares its ports only with its own workers`);
    this.name = "PortInUseError";
  }
}

/** Throws PortInUseError when anything holds hostname:port. Port 0 (any free port) is not probed. */
export function claimPort(flag: string, hostname: string, port: number): void {
  if (port === 0) return;
  const probe = bindOrExplain(flag, hostname, port, () => Bun.listen({ hostname, port, socket: { data() {} } }));
  probe.stop(true);
}

/** Runs a bind; "address in use" becomes a PortInUseError naming the flag. */
export function bindOrExplain<T>(flag: string, hostname: string, port: number, bind: () => T): T {
  try {
    return bind();
  } catch (err) {
    if (isAddrInUse(err)) throw new PortInUseError(flag, hostname, port);
    throw err;
  }
}
