// Start-up failures in Portico's words. Bun's listen errors name neither the address nor the
// flag ("Failed to start server. Is port 8080 in use?", "EADDRNOTAVAIL: address not available,
// listen"): the operator gets the flag to change instead.
import type { Config } from "../config/types.ts";

type ListenConfig = Pick<Config, "bind" | "httpPort" | "httpsPort" | "adminPort">;

function portFlag(c: ListenConfig, port: number): string | null {
  if (port === c.httpPort) return "--http-port";
  if (port === c.httpsPort) return "--https-port";
  if (port === c.adminPort) return "--admin-port";
  return null;
}

/** One line for the `start-up failed` log record. */
export function startupErrorMessage(err: unknown, c: ListenConfig): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = String((err as { code?: unknown } | null)?.code ?? "");
  const syscall = String((err as { syscall?: unknown } | null)?.syscall ?? "");
  if (code === "EADDRINUSE") {
    const port = Number(/port (\d+)/i.exec(message)?.[1] ?? Number.NaN);
    const flag = Number.isInteger(port) ? portFlag(c, port) : null;
    const which = flag ? `${flag} ${port}` : Number.isInteger(port) ? `port ${port}` : "a port";
    return `cannot listen on ${c.bind}: ${which} is already in use by another process (choose another with ${flag ?? "--http-port, --https-port or --admin-port"}) (EADDRINUSE)`;
  }
  if (code === "EADDRNOTAVAIL" && syscall === "listen") return `cannot listen on --bind ${c.bind}: it is not an address of this host (EADDRNOTAVAIL)`;
  if (code === "EACCES" && syscall === "listen") {
    return `cannot listen on ${c.bind}: permission denied; ports below 1024 need root or CAP_NET_BIND_SERVICE (--http-port ${c.httpPort}, --https-port ${c.httpsPort}, --admin-port ${c.adminPort}) (EACCES)`;
  }
  return message;
}
