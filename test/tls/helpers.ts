// Shared pieces of the TLS suites: bindings, a marker handler, and a raw handshake probe.
import { readFileSync } from "node:fs";
import { connect, type PeerCertificate } from "node:tls";
import type { CertificateBinding } from "../../src/compile/types.ts";
import { silentLogger } from "../../src/log/logger.ts";
import type { ServeHandler } from "../../src/tls/listener.ts";

export const quietLog = silentLogger;

export function binding(host: string, secret: string | null, pem: { certPem: string; keyPem: string } | null, version: string | null = secret && `${secret}@1`): CertificateBinding {
  return { host, secret, cert: pem?.certPem ?? null, key: pem?.keyPem ?? null, version, ingress: "default/web" };
}

/** Answers with the Host header and a marker, so a test sees which server instance answered. */
export function markerHandler(marker: () => string): () => ServeHandler {
  return () => {
    const tag = marker();
    return { fetch: (req) => new Response(`${req.headers.get("host") ?? ""} ${tag}`) };
  };
}

export interface Peer {
  readonly cn: string;
  readonly san: string;
  readonly protocol: string | null;
  /** SHA-256 fingerprint of the served leaf certificate (node:tls's `fingerprint256`). */
  readonly fingerprint256: string;
}

/** One TLS handshake; resolves with the served certificate's CN, SANs and fingerprint. */
export function peerCertificate(port: number, servername?: string, extra: Record<string, unknown> = {}): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, rejectUnauthorized: false, ...(servername ? { servername } : {}), ...extra }, () => {
      const cert: PeerCertificate = socket.getPeerCertificate();
      const cn = Array.isArray(cert.subject?.CN) ? cert.subject.CN.join(",") : (cert.subject?.CN ?? "");
      resolve({ cn, san: cert.subjectaltname ?? "", protocol: socket.getProtocol(), fingerprint256: cert.fingerprint256 });
      socket.end();
    });
    socket.setTimeout(5000, () => socket.destroy(new Error("handshake timeout")));
    socket.on("error", reject);
  });
}

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * A strict HTTP/1.1 client over one TLS connection, so the suites count every failure
 * themselves (no hidden retry as in pooled clients). It reconnects only when the previous
 * response said `Connection: close` (RFC 9112 §9.6), which is exactly what a drain asks for.
 */
export class RawClient {
  private socket: ReturnType<typeof connect> | null = null;
  private buffer = "";
  private waiter: (() => void) | null = null;
  private closed = false;
  connects = 0;
  peer = "";

  constructor(private readonly port: number, private readonly servername: string) {}

  private open(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.buffer = "";
      this.closed = false;
      const s = connect({ host: "127.0.0.1", port: this.port, servername: this.servername, rejectUnauthorized: false }, () => {
        const cn = s.getPeerCertificate().subject?.CN;
        this.peer = Array.isArray(cn) ? cn.join(",") : (cn ?? "");
        this.connects++;
        resolve();
      });
      s.setEncoding("utf8");
      // Events of a previous socket (closing after Connection: close) must not touch this one.
      s.on("data", (d: string) => {
        if (this.socket !== s) return;
        this.buffer += d;
        this.waiter?.();
      });
      s.on("close", () => {
        if (this.socket !== s) return;
        this.closed = true;
        this.waiter?.();
      });
      s.on("error", (e) => {
        reject(e);
        if (this.socket !== s) return;
        this.closed = true;
        this.waiter?.();
      });
      this.socket = s;
    });
  }

  async request(path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
    if (!this.socket || this.closed) await this.open();
    const lines = [`GET ${path} HTTP/1.1`, `Host: ${this.servername}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.socket!.write(`${lines.join("\r\n")}\r\n\r\n`);
    // Woken by data, close or error (open() above); the one timer bounds the whole wait.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.waiter?.();
    }, 5000);
    try {
      return await this.readResponse(() => timedOut);
    } finally {
      clearTimeout(timer);
    }
  }

  private async readResponse(timedOut: () => boolean): Promise<RawResponse> {
    for (;;) {
      const end = this.buffer.indexOf("\r\n\r\n");
      if (end >= 0) {
        const [statusLine = "", ...rest] = this.buffer.slice(0, end).split("\r\n");
        const h: Record<string, string> = {};
        for (const l of rest) {
          const i = l.indexOf(":");
          h[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
        }
        const status = Number(statusLine.split(" ")[1]);
        const len = status === 101 ? 0 : Number(h["content-length"] ?? "0");
        if (this.buffer.length >= end + 4 + len) {
          const body = this.buffer.slice(end + 4, end + 4 + len);
          this.buffer = this.buffer.slice(end + 4 + len);
          if (h.connection?.toLowerCase() === "close") this.close();
          return { status, headers: h, body };
        }
      }
      if (this.closed) throw new Error("connection closed before a full response");
      if (timedOut()) throw new Error("response timeout");
      await new Promise<void>((r) => (this.waiter = r));
      this.waiter = null;
    }
  }

  close(): void {
    this.socket?.end();
    this.socket = null;
  }
}

/**
 * How many sockets listen on this TCP port now, read synchronously from the kernel's tables
 * (Linux /proc/net/tcp and tcp6: state 0A is LISTEN; the local port is the hex after ':').
 * With SO_REUSEPORT each server bound to the port is one row, and the kernel spreads new
 * connections over all of them: 2 means a second server would still take some clients.
 */
export function listeningSockets(port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  let n = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "latin1");
    } catch {
      continue; // no IPv6 table in this kernel
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === "0A" && f[1]?.endsWith(`:${hex}`)) n++;
    }
  }
  return n;
}
